#!/usr/bin/env python3
"""The decode benchmark's table from bench/decode_bench.py's JSON: per shape, flashtune's K+V
TB/s (dense, paged 16, paged 256), SDPA cuDNN's and SDPA flash's on the same bytes, the ratios
to cuDNN, and each baseline's time against this library's (new / baseline; below 1 is faster),
dense and, where the JSON has them, paged; with --rounds, the per-round dense / cuDNN ratios.

usage: decode_table.py DECODE_BENCH_JSON   (prints Markdown)
"""
import json
import sys


def main():
    data = json.load(open(sys.argv[1]))
    rows = data["rows"]
    read = data["read_tbps"]
    layouts = [x for x in ("dense", "paged16", "paged256") if rows and x + "_us" in rows[0]]
    bases = sorted({k[len("base_"):-len("_us")] for r in rows for k in r
                    if k.startswith("base_") and k.endswith("_us") and k not in ("base_us", "base_eager_us")
                    and not k.endswith("_eager_us") and not k.endswith("_rounds_us")})
    head = ["shape"] + [f"{x} TB/s" for x in layouts] + ["cuDNN", "flash"] + [f"{x} x cuDNN" for x in layouts]
    # Paged baselines: pbase_<name>_<layout>_us.
    pbases = [(b, x) for b in bases for x in layouts if x != "dense" and rows and f"pbase_{b}_{x}_us" in rows[0]]
    # decode_bench.py --rounds: the per-round dense / cuDNN ratios' median and range.
    rounds = bool(rows) and "dense_x_cudnn_rounds" in rows[0]
    if rounds:
        head += [f"dense x cuDNN by round: median [least, most] of {len(rows[0]['dense_x_cudnn_rounds'])}"]
    head += [f"new/{b} time" for b in bases]
    head += [f"new/{b} {x} time" for b, x in pbases]
    print(f"streaming read {read:.2f} TB/s")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        tb = lambda us: r["kv_bytes"] / (us * 1e-6) / 1e12  # noqa: E731
        cudnn, flash = tb(r["cudnn_us"]), tb(r["flash_us"])
        cells = [f"B{r['batch']} x {r['keys'] // 1024}k"]
        cells += [f"{tb(r[x + '_us']):.2f} ({tb(r[x + '_us']) / read * 100:.0f}%)" for x in layouts]
        cells += [f"{cudnn:.2f}", f"{flash:.2f}"]
        cells += [f"{tb(r[x + '_us']) / cudnn:.2f}" for x in layouts]
        if rounds:
            per = sorted(r["dense_x_cudnn_rounds"])
            cells.append(f"{per[len(per) // 2]:.3f} [{per[0]:.3f}, {per[-1]:.3f}]")
        cells += [f"{r['dense_us'] / r[f'base_{b}_us']:.3f}" for b in bases]
        cells += [f"{r[x + '_us'] / r[f'pbase_{b}_{x}_us']:.3f}" for b, x in pbases]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
