"""PyTorch CPU peer for benches/text_tower_products.rs: the matrix products of one CoOp step on a
ViT-B/16-shaped CLIP text tower (12 layers; q, k, v, out 512 -> 512, fc1 512 -> 2048, fc2 2048 -> 512;
385 rows), forward `x @ W` and backward to the input `dY @ W.t()` (a transposed view, as autograd
forms it from nn.Linear's [out, in] weight: here `W` is stored [in, out] as in burn, so `W.t()` is the
same kind of view), torch.set_num_threads(2). Prints the median time of the whole set.

Run: python crates/calibra-models/benches/peers/text_tower_products_peer.py [REPS]
"""

import statistics
import sys
import time

import torch

PROJECTIONS = [(512, 512)] * 4 + [(512, 2048), (2048, 512)]
LAYERS, ROWS = 12, 5 * 77


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    torch.manual_seed(0)
    torch.set_num_threads(2)
    weights = [torch.randn(i, o) for _ in range(LAYERS) for (i, o) in PROJECTIONS]
    inputs = [torch.randn(ROWS, i) for (i, _) in PROJECTIONS]
    grads = [torch.randn(ROWS, o) for (_, o) in PROJECTIONS]

    def run(backward):
        t0 = time.perf_counter()
        sink = 0.0
        with torch.no_grad():
            for n, w in enumerate(weights):
                p = n % len(PROJECTIONS)
                out = grads[p] @ w.t() if backward else inputs[p] @ w
                sink += float(out[0, 0])
        return time.perf_counter() - t0

    run(False), run(True)
    rounds = [(run(False), run(True)) for _ in range(reps)]
    forward = statistics.median(r[0] for r in rounds)
    backward = statistics.median(r[1] for r in rounds)
    step = statistics.median_low([r[0] + r[1] for r in rounds])
    flops = sum(2.0 * ROWS * i * o for (i, o) in PROJECTIONS) * LAYERS
    print(
        f"torch CPU text-tower products, {ROWS} rows, {torch.get_num_threads()} threads: median {step:.4f} s/step "
        f"(forward {forward:.4f} s, {flops / forward / 1e9:.0f} GFLOP/s; backward to the input {backward:.4f} s, "
        f"{flops / backward / 1e9:.0f} GFLOP/s; {reps} repetitions)"
    )


if __name__ == "__main__":
    main()
