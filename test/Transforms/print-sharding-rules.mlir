// RUN: partita-opt %s --partita-print-sharding-rules --verify-diagnostics -o /dev/null

// Every op states its sharding rule; the pass prints it as a remark.
partita.mesh @mesh = <["x"=2]>
func.func @all(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %p: tensor<4x8xi1>, %i: tensor<i32>, %v: tensor<8xf32>, %t: tensor<100x16xf32>, %ids: tensor<2x5xi32>, %g: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %z: tensor<f32>) {
  // Constants and iota can be produced blockwise.
  // expected-remark @+1 {{() -> ([i, j]) {i=4, j=8}}}
  %c = partita.constant dense<1.0> : tensor<4x8xf32>
  // expected-remark @+1 {{() -> ([i, j]) {i=4, j=8}}}
  %io = partita.iota dim = 1 : tensor<4x8xi32>
  // Linear: a partial sum passes.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8} partial=single(0) sum}}
  %n = partita.neg %a : tensor<4x8xf32>
  // Nonlinear: no partial value passes.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %e = partita.exp %a : tensor<4x8xf32>
  // Nonlinear unary ops: no partial value passes.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_abs = partita.abs %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_sign = partita.sign %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_log = partita.log %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_log1p = partita.log1p %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_tanh = partita.tanh %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_logistic = partita.logistic %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_sqrt = partita.sqrt %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_rsqrt = partita.rsqrt %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_erf = partita.erf %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_sin = partita.sin %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_cos = partita.cos %a : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_floor = partita.floor %a : tensor<4x8xf32>
  // Bitwise ops: no partial value passes.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %u_not = partita.not %p : tensor<4x8xi1>
  // Nonlinear binary ops: no partial value passes.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %b_rem = partita.rem %a, %b : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %b_and = partita.and %p, %p : tensor<4x8xi1>
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %b_or = partita.or %p, %p : tensor<4x8xi1>
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %b_xor = partita.xor %p, %p : tensor<4x8xi1>
  // Jointly linear: both operands partial the same way.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=joint(0, 1) sum}}
  %add = partita.add %a, %b : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=joint(0, 1) sum}}
  %sub = partita.sub %a, %b : tensor<4x8xf32>
  // Linear in either operand while the other is whole.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=single(0, 1) sum}}
  %mul = partita.mul %a, %b : tensor<4x8xf32>
  // Linear in the numerator only.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=single(0) sum}}
  %div = partita.div %a, %b : tensor<4x8xf32>
  // Partial maxima combine under max.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=joint(0, 1) max}}
  %max = partita.max %a, %b : tensor<4x8xf32>
  // Partial minima combine under min.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=joint(0, 1) min}}
  %min = partita.min %a, %b : tensor<4x8xf32>
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %pow = partita.pow %a, %b : tensor<4x8xf32>
  // Comparisons are elementwise with no partial values.
  // expected-remark @+1 {{([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %cmp = partita.compare lt, %a, %b : tensor<4x8xf32>
  // Choosing between partial sums gives a partial sum.
  // expected-remark @+1 {{([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=joint(1, 2) sum}}
  %sel = partita.select %p, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
  // Rounding is not linear: no partial value passes.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %cv = partita.convert %a : tensor<4x8xf32> -> tensor<4x8xbf16>
  // Labels absent from the output are reduction factors.
  // expected-remark @+1 {{([i, j], [j, k]) -> ([i, k]) {i=4, j=8 reduction, k=16} reduction=sum partial=single(0, 1) sum}}
  %ein = partita.einsum "ij,jk->ik" %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // Reduced dimensions are reduction factors of the reduce kind.
  // expected-remark @+1 {{([i, j]) -> ([i]) {i=4, j=8 reduction} reduction=sum partial=single(0) sum}}
  %rs = partita.reduce sum %a dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // expected-remark @+1 {{([i, j]) -> ([j]) {i=4 reduction, j=8} reduction=min partial=single(0) min}}
  %rn = partita.reduce min %a dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  // expected-remark @+1 {{([i, j]) -> ([j]) {i=4 need-replication, j=8}}}
  %ro = partita.reduce or %p dims = [0] : tensor<4x8xi1> -> tensor<8xi1>
  // expected-remark @+1 {{([i, j]) -> ([j]) {i=4 reduction, j=8} reduction=max partial=single(0) max}}
  %rm = partita.reduce max %a dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  // and/or have no partial form: the reduced dimension stays whole.
  // expected-remark @+1 {{([i, j]) -> ([i]) {i=4, j=8 need-replication}}}
  %ra = partita.reduce and %p dims = [1] : tensor<4x8xi1> -> tensor<4xi1>
  // The searched dimension must stay whole.
  // expected-remark @+1 {{([i, j]) -> ([i]) {i=4, j=8 need-replication}}}
  %am = partita.argmax %a dim = 1 : tensor<4x8xf32> -> tensor<4xi32>
  // Sorting needs the whole dimension; values and indices share factors.
  // expected-remark @+1 {{([i, j]) -> ([i, k], [i, k]) {i=4, j=8 need-replication, k=2 need-replication}}}
  %tv, %ti = partita.top_k %a dim = 1 k = 2 : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  // A prefix sum needs the whole scanned dimension.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8 need-replication} partial=single(0) sum}}
  %cs = partita.cumsum %a dim = 1 : tensor<4x8xf32>
  // A new dimension gets a factor of its own.
  // expected-remark @+1 {{([j]) -> ([i, j]) {i=4, j=8} partial=single(0) sum,max,min}}
  %bc = partita.broadcast %v dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  // Merged dimensions become a compound factor.
  // expected-remark @+1 {{([i, j]) -> ([i*j]) {i=4, j=8} partial=single(0) sum,max,min}}
  %rh = partita.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
  // Factors follow the permutation.
  // expected-remark @+1 {{([i, j]) -> ([j, i]) {i=4, j=8} partial=single(0) sum,max,min}}
  %tr = partita.transpose %a perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // Partially taken dimensions must stay whole.
  // expected-remark @+1 {{([i, j]) -> ([i, k]) {i=4, j=8 need-replication, k=3 need-replication} partial=single(0) sum,max,min}}
  %sl = partita.slice %a start = [0, 2] limit = [4, 8] stride = [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  // Run-time offsets need the whole dimension; indices have no factors.
  // expected-remark @+1 {{([i, k], [], []) -> ([j, k]) {i=4 need-replication, j=1 need-replication, k=8} partial=single(0) sum,max,min}}
  %ds = partita.dynamic_slice %a[%i, %i] sizes = [1, 8] : tensor<4x8xf32>, tensor<i32>, tensor<i32> -> tensor<1x8xf32>
  // Fully overwritten dimensions pass through.
  // expected-remark @+1 {{([i, k], [j, k], [], []) -> ([i, k]) {i=4 need-replication, j=1 need-replication, k=8} partial=joint(0, 1) sum}}
  %du = partita.dynamic_update_slice %a, %ds[%i, %i] : tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>
  // The joined dimension stays whole.
  // expected-remark @+1 {{([j, i], [k, i]) -> ([l, i]) {i=8, j=4 need-replication, k=4 need-replication, l=8 need-replication} partial=joint(0, 1) sum}}
  %cc = partita.concatenate %a, %b dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // Padded dimensions stay whole.
  // expected-remark @+1 {{([i, j], []) -> ([i, k]) {i=4, j=8 need-replication, k=9 need-replication}}}
  %pd = partita.pad %a, %z low = [0, 1] high = [0, 0] : tensor<4x8xf32>, tensor<f32> -> tensor<4x9xf32>
  // Any row may be read: the table rows stay whole.
  // expected-remark @+1 {{([i, l], [j, k]) -> ([j, k, l]) {i=100 reduction, j=2, k=5, l=16} reduction=sum partial=single(0) sum}}
  %ga = partita.gather %t[%ids] : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  // Index positions are summed into the whole table: they stay whole.
  // expected-remark @+1 {{([i, l], [j, k], [j, k, l]) -> ([i, l]) {i=100 need-replication, j=2 need-replication, k=5 need-replication, l=16} partial=joint(0, 2) sum}}
  %sa = partita.scatter_add %t, %ids, %g : tensor<100x16xf32>, tensor<2x5xi32>, tensor<2x5x16xf32>
  // Into a table of zeros (an embedding's gradient) each device adds its
  // own positions' rows: positions are reduction factors, and a partial
  // gradient passes alone.
  // expected-remark @+1 {{() -> ([]) {}}}
  %z0 = partita.constant dense<0.0> : tensor<f32>
  // expected-remark @+1 {{([]) -> ([i, j]) {i=100, j=16} partial=single(0) sum,max,min}}
  %zt = partita.broadcast %z0 dims = [] : tensor<f32> -> tensor<100x16xf32>
  // expected-remark @+1 {{([i, l], [j, k], [j, k, l]) -> ([i, l]) {i=100 need-replication, j=2 reduction, k=5 reduction, l=16} reduction=sum partial=single(2) sum}}
  %sz = partita.scatter_add %zt, %ids, %g : tensor<100x16xf32>, tensor<2x5xi32>, tensor<2x5x16xf32>
  // Carried values keep their sharding; partial values pass.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8} partial=per-value(0) sum,max,min}}
  %lp = partita.loop 2 times (%it) iter_args(%acc = %a) : tensor<4x8xf32> {
    partita.yield %acc : tensor<4x8xf32>
  }
  // Each value keeps its own sharding.
  // expected-remark @+1 {{([i, j], [k]) -> ([i, j], [k]) {i=4, j=8, k=8} partial=per-value(0, 1) sum,max,min}}
  %ob:2 = partita.optimization_barrier %a, %v : tensor<4x8xf32>, tensor<8xf32>
  // The constraint passes its input through.
  // expected-remark @+1 {{([i, j]) -> ([i, j]) {i=4, j=8}}}
  %sc = partita.sharding_constraint %a <@mesh, [{"x"}, {}]> : tensor<4x8xf32>
  // A reshard shares no factor between input and result.
  // expected-remark @+1 {{([i, k]) -> ([j, l]) {i=4, j=4, k=8, l=8}}}
  %rd = partita.reshard %a <@mesh, [{}, {"x"}]> : tensor<4x8xf32>
  return
}
