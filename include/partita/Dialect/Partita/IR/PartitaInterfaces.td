//===- PartitaInterfaces.td - Op interfaces -----------------*- tablegen -*-===//
#ifndef PARTITA_INTERFACES_TD
#define PARTITA_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Partita_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::partita";
  let description = [{
    An op's sharding knowledge as data: the factor mapping of its operand and
    result dimensions, the factor types, and how partial values pass through
    it (see `partita/Sharding/ShardingRule.h`). Propagation and the
    partitioner read only this; they never switch on op kinds. Ops of other
    dialects can take part by attaching an external model.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"The op's sharding rule for its current operand and result types.",
      /*retTy=*/"::partita::OpShardingRule",
      /*methodName=*/"getShardingRule",
      /*args=*/(ins)>
  ];
}

/// The trait list entry of ops that implement the interface.
defvar HasShardingRule = DeclareOpInterfaceMethods<Partita_ShardingRuleOpInterface>;

#endif // PARTITA_INTERFACES_TD
