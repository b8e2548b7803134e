#!/usr/bin/env python3
"""Writes a GPT-style transformer (forward pass + cross-entropy loss) in the
partita dialect, unrolled over its layers, for the propagation benchmark.

Only the parameters and the input are annotated, with Megatron's tensor
parallelism over "model" and data parallelism over "data"; propagation has
to find every activation's sharding.

    gen_transformer.py --layers 12 [--batch 8 --seq 128 --embed 256
                        --heads 8 --mlp 1024 --vocab 1024] > gpt.mlir
"""
import argparse


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--embed", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--mlp", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--mesh", default='"data"=2, "model"=4')
    a = p.parse_args()
    B, S, D, H, F, V = a.batch, a.seq, a.embed, a.heads, a.mlp, a.vocab
    K = D // H
    f32 = "f32"

    def t(*shape):
        return "tensor<" + "x".join(str(s) for s in shape) + "x" + f32 + ">"

    def sh(*dims):
        return "#partita.sharding<@mesh, [" + ", ".join(dims) + "]>"

    data = '{"data"}'
    args = []
    args.append(f'%tokens: tensor<{B}x{S}xi32> {{partita.role = #partita.role<input>, '
                f'partita.sharding = {sh(data, "{}")}}} loc("tokens")')
    args.append(f'%labels: {t(B, S, V)} {{partita.role = #partita.role<input>, '
                f'partita.sharding = {sh(data, "{}", "{}")}}} loc("labels")')
    args.append(f'%embed: {t(V, D)} {{partita.role = #partita.role<param>, '
                f'partita.sharding = {sh("{}", "{}")}}} loc("embed")')
    for l in range(a.layers):
        n = f"layer{l}"
        for w, shape, spec in [
            ("wq", (D, H, K), ("{}", '{"model"}', "{}")),
            ("wk", (D, H, K), ("{}", '{"model"}', "{}")),
            ("wv", (D, H, K), ("{}", '{"model"}', "{}")),
            ("wo", (H, K, D), ('{"model"}', "{}", "{}")),
            ("w1", (D, F), ("{}", '{"model"}')),
            ("w2", (F, D), ('{"model"}', "{}")),
        ]:
            args.append(f'%{n}_{w}: {t(*shape)} {{partita.role = #partita.role<param>, '
                        f'partita.sharding = {sh(*spec)}}} loc("{n}.{w}")')
    out = []
    out.append(f"partita.mesh @mesh = <[{a.mesh}]>")
    out.append(f"func.func @gpt(" + ",\n    ".join(args) + ") -> tensor<f32> {")
    c = [0]

    def op(text, name):
        c[0] += 1
        v = f"%v{c[0]}"
        out.append(f"  {v} = {text} loc(\"{name}\")")
        return v

    x = op(f"partita.gather %embed[%tokens] : {t(V, D)}, tensor<{B}x{S}xi32> -> {t(B, S, D)}", "embed.lookup")
    for l in range(a.layers):
        n = f"layer{l}"
        q = op(f'partita.einsum "bsd,dhk->bshk" {x}, %{n}_wq : ({t(B,S,D)}, {t(D,H,K)}) -> {t(B,S,H,K)}', f"{n}.attn.q")
        k = op(f'partita.einsum "bsd,dhk->bshk" {x}, %{n}_wk : ({t(B,S,D)}, {t(D,H,K)}) -> {t(B,S,H,K)}', f"{n}.attn.k")
        v = op(f'partita.einsum "bsd,dhk->bshk" {x}, %{n}_wv : ({t(B,S,D)}, {t(D,H,K)}) -> {t(B,S,H,K)}', f"{n}.attn.v")
        s = op(f'partita.einsum "bshk,bthk->bhst" {q}, {k} : ({t(B,S,H,K)}, {t(B,S,H,K)}) -> {t(B,H,S,S)}', f"{n}.attn.scores")
        m = op(f"partita.reduce max {s} dims = [3] : {t(B,H,S,S)} -> {t(B,H,S)}", f"{n}.attn.max")
        mb = op(f"partita.broadcast {m} dims = [0, 1, 2] : {t(B,H,S)} -> {t(B,H,S,S)}", f"{n}.attn.max_b")
        d = op(f"partita.sub {s}, {mb} : {t(B,H,S,S)}", f"{n}.attn.shifted")
        e = op(f"partita.exp {d} : {t(B,H,S,S)}", f"{n}.attn.exp")
        z = op(f"partita.reduce sum {e} dims = [3] : {t(B,H,S,S)} -> {t(B,H,S)}", f"{n}.attn.norm")
        zb = op(f"partita.broadcast {z} dims = [0, 1, 2] : {t(B,H,S)} -> {t(B,H,S,S)}", f"{n}.attn.norm_b")
        pr = op(f"partita.div {e}, {zb} : {t(B,H,S,S)}", f"{n}.attn.probs")
        ctx = op(f'partita.einsum "bhst,bthk->bshk" {pr}, {v} : ({t(B,H,S,S)}, {t(B,S,H,K)}) -> {t(B,S,H,K)}', f"{n}.attn.context")
        ao = op(f'partita.einsum "bshk,hkd->bsd" {ctx}, %{n}_wo : ({t(B,S,H,K)}, {t(H,K,D)}) -> {t(B,S,D)}', f"{n}.attn.out")
        r1 = op(f"partita.add {x}, {ao} : {t(B,S,D)}", f"{n}.attn.residual")
        h = op(f'partita.einsum "bsd,df->bsf" {r1}, %{n}_w1 : ({t(B,S,D)}, {t(D,F)}) -> {t(B,S,F)}', f"{n}.mlp.up")
        g = op(f"partita.tanh {h} : {t(B,S,F)}", f"{n}.mlp.act")
        y = op(f'partita.einsum "bsf,fd->bsd" {g}, %{n}_w2 : ({t(B,S,F)}, {t(F,D)}) -> {t(B,S,D)}', f"{n}.mlp.down")
        x = op(f"partita.add {r1}, {y} : {t(B,S,D)}", f"{n}.mlp.residual")
    logits = op(f'partita.einsum "bsd,vd->bsv" {x}, %embed : ({t(B,S,D)}, {t(V,D)}) -> {t(B,S,V)}', "logits")
    mx = op(f"partita.reduce max {logits} dims = [2] : {t(B,S,V)} -> {t(B,S)}", "loss.max")
    mxb = op(f"partita.broadcast {mx} dims = [0, 1] : {t(B,S)} -> {t(B,S,V)}", "loss.max_b")
    sh_ = op(f"partita.sub {logits}, {mxb} : {t(B,S,V)}", "loss.shifted")
    ex = op(f"partita.exp {sh_} : {t(B,S,V)}", "loss.exp")
    se = op(f"partita.reduce sum {ex} dims = [2] : {t(B,S,V)} -> {t(B,S)}", "loss.sumexp")
    lse = op(f"partita.log {se} : {t(B,S)}", "loss.logsumexp")
    lseb = op(f"partita.broadcast {lse} dims = [0, 1] : {t(B,S)} -> {t(B,S,V)}", "loss.lse_b")
    lp = op(f"partita.sub {sh_}, {lseb} : {t(B,S,V)}", "loss.logprobs")
    pick = op(f"partita.mul {lp}, %labels : {t(B,S,V)}", "loss.picked")
    tot = op(f"partita.reduce sum {pick} dims = [0, 1, 2] : {t(B,S,V)} -> tensor<f32>", "loss.total")
    neg = op(f"partita.neg {tot} : tensor<f32>", "loss")
    out.append(f"  return {neg} : tensor<f32>")
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
