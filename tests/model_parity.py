#!/usr/bin/env python3
"""Every model family's forward and backward against PyTorch on the same
weights: tests/model_dump writes one training step of a small random model
(CONFIGS in model_dump.c: every family, activation, continuous_norm, stacked
and side-by-side DCN-V2, one and several attention heads); the same network
built by bench/torch_models.py, in float64, gets the dump's weights by name
and the same rows; predictions, loss and every parameter's gradient must
agree within 1e-4 of the largest value of each tensor (float32 against
float64: GEMM sums of tens of products; see close() for gradients that
cancel to zero).

    model_parity.py MODEL_DUMP [SEED]      exit 0, 1 (a mismatch) or 77 (no torch)"""
import json
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("model_parity: PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import torch_models  # noqa: E402

RTOL = 1e-4


def close(what, got, want, floor=1e-6):
    """|got - want| <= RTOL * max(max|want|, floor).  A tensor whose gradient
    cancels to zero (a bias before a batch norm) holds float32 rounding of
    the terms that cancelled: floor is a tenth of the model's largest
    gradient for those."""
    got = torch.as_tensor(got, dtype=torch.float64).reshape(-1)
    want = want.detach().reshape(-1).double()
    scale = max(want.abs().max().item() if want.numel() else 0.0, floor)
    worst = (got - want).abs().max().item() if want.numel() else 0.0
    if worst > RTOL * scale:
        i = int((got - want).abs().argmax())
        print(f"  {what}: worst |diff| {worst:.3g} > {RTOL:g} x {scale:.3g} at {i}: "
              f"ringtrain {got[i].item():.9g}, PyTorch {want[i].item():.9g}")
        return False
    return True


def check(dump):
    spec = dump["spec"]
    n = dump["n"]
    model = torch_models.build(spec).double()
    model.train()
    names = model.names(spec)
    missing = set(dump["params"]) ^ set(names)
    if missing:
        print(f"  tensors only on one side: {sorted(missing)}")
        return False
    with torch.no_grad():
        for name, p in names.items():
            p.copy_(torch.tensor(dump["params"][name], dtype=torch.float64).reshape(p.shape))
    if spec["n_cont"]:
        torch_models.set_standardize(model, dump["mean"], dump["std"])
    if dump.get("ple_edges"):
        holder = torch_models.numeric_inputs(model)
        with torch.no_grad():
            holder.edges.copy_(torch.tensor(dump["ple_edges"], dtype=torch.float64)
                               .reshape(holder.edges.shape))
    ncat = len(spec["categorical"])
    cat = torch.tensor(dump["cat"], dtype=torch.long).reshape(n, ncat)
    cont = torch.tensor(dump["cont"], dtype=torch.float64).reshape(n, spec["n_cont"])
    label = torch.tensor(dump["label"], dtype=torch.float64)
    if spec["architecture"] == "tabm":  # the loss: the members' mean; the prediction: their mean
        members = model.members(cat, cont)
        pred = members.mean(1)
        loss = (members - label[:, None]).abs().mean()
    else:
        pred = model(cat, cont)
        loss = (pred - label).abs().mean()
    loss.backward()
    ok = close("predictions", dump["pred"], pred)
    ok = close("loss", [dump["loss"]], loss.reshape(1)) and ok
    floor = 1e-1 * max(p.grad.abs().max().item() for p in names.values() if p.grad.numel())
    for name, p in names.items():
        ok = close(f"gradient of {name}", dump["grads"][name], p.grad, floor) and ok
    return ok


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    seed = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("RT_TEST_SEED", str(os.getpid()))
    print(f"model_parity: seed {seed} (RT_TEST_SEED), PyTorch {torch.__version__}")
    nconf = int(subprocess.run([binary, "--configs"], capture_output=True, text=True,
                               check=True, timeout=60).stdout)
    failed = 0
    for c in range(nconf):
        out = subprocess.run([binary, str(c), seed], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            print(f"config {c}: model_dump failed: {out.stderr.strip()}")
            failed += 1
            continue
        dump = json.loads(out.stdout)
        spec = dump["spec"]
        what = (f"config {c}: {spec['architecture']} ({spec['activation']}, "
                f"{spec['continuous_norm']}, {len(dump['params'])} tensors, "
                f"{sum(len(v) for v in dump['params'].values())} parameters)")
        ok = check(dump)
        print(f"{what}: {'same' if ok else 'DIFFERENT'}")
        failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
