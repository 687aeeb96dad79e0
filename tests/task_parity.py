#!/usr/bin/env python3
"""The task's numbers against PyTorch's: tests/task_dump writes every loss
(its weighted sum, weight and gradient), a few steps of every optimizer
and every schedule's learning rates; the same computed here with
torch.nn.functional's losses, torch.optim's optimizers (and
clip_grad_norm_) and torch.optim.lr_scheduler, in float64, must agree:

  - losses: the mean (sum / weight) and the gradient within 1e-6 of the
    largest value (the kernel's float gradient against float64);
  - optimizers: the parameters after every step within 1e-6 relative
    (adam is Keras' form: against torch.optim.Adam at eps = 1e-8, where the
    forms agree, and against Keras' formula at its eps = 1e-3);
  - schedules: every step's rate within 1e-9 relative.

    task_parity.py TASK_DUMP [SEED]      exit 0, 1 (a mismatch) or 77 (no torch)"""
import json
import math
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("task_parity: PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)

failures = []


def check(what, got, want, tol, relative=False):
    got = torch.as_tensor(got, dtype=torch.float64).reshape(-1)
    want = torch.as_tensor(want, dtype=torch.float64).reshape(-1)
    if got.shape != want.shape:
        failures.append(f"{what}: {got.numel()} values, PyTorch has {want.numel()}")
        return
    bound = tol * (want.abs().clamp(min=1.0) if relative else max(want.abs().max().item(), 1e-12))
    err = (got - want).abs()
    bad = err > bound
    if bool(bad.any()):
        i = int((err - bound).argmax())
        failures.append(f"{what}: [{i}] = {got[i].item():.9g}, PyTorch {want[i].item():.9g}")


def t64(x):
    """Floats the dump printed with 9 digits: the float32 they name, widened."""
    return torch.tensor(x, dtype=torch.float32).double()


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32))


def row_losses(c, z):
    """Each row's unweighted loss, PyTorch's function (reduction='none')."""
    kind, y = c["loss"], t64(c["y"])
    if kind == "mae":
        return F.l1_loss(z[:, 0], y, reduction="none")
    if kind == "mse":
        return F.mse_loss(z[:, 0], y, reduction="none")
    if kind == "huber":
        return F.huber_loss(z[:, 0], y, delta=c["delta"], reduction="none")
    if kind == "poisson":
        return F.poisson_nll_loss(z[:, 0], y, log_input=True, full=False, reduction="none")
    if kind == "bce":
        s = c["smoothing"]
        return F.binary_cross_entropy_with_logits(z[:, 0], y * (1 - s) + s / 2, reduction="none")
    cw = t64(c["class_w"]) if "class_w" in c else None
    return F.cross_entropy(z, y.long(), weight=cw, label_smoothing=c["smoothing"],
                           reduction="none")


def check_loss(c):
    K = c["K"]
    name = f"{c['loss']} (K {K}, smoothing {c['smoothing']}, weights {'w' in c}, " \
           f"class weights {'class_w' in c})"
    z = t64(c["z"]).reshape(-1, K).requires_grad_(True)
    y = t64(c["y"])
    w = t64(c["w"]) if "w" in c else torch.ones_like(y)
    cw = t64(c["class_w"]) if "class_w" in c else None
    # each row's weight: its sample weight times its class's (cross_entropy's
    # 'none' already holds the class weight)
    c_i = w * (cw[y.long()] if cw is not None else 1.0)
    rows = row_losses(c, z)
    if c["loss"] == "cross_entropy":
        total = (rows * w).sum()
    else:
        total = (rows * c_i).sum()
    mean = total / c_i.sum()
    mean.backward()
    check(f"loss {name}: weight", [c["wsum"]], [c_i.sum().item()], 1e-9)
    check(f"loss {name}: mean", [c["sum"] / c["wsum"]], [mean.item()], 1e-9)
    check(f"loss {name}: gradient", c["dz"], z.grad, 1e-6)
    if "w" not in c and c["loss"] in ("cross_entropy", "bce", "mse", "mae", "huber"):
        # without sample weights the mean is PyTorch's own reduction='mean'
        if c["loss"] == "cross_entropy":
            ref = F.cross_entropy(z.detach(), y.long(), weight=cw, label_smoothing=c["smoothing"])
        elif c["loss"] == "bce" and cw is None:
            s = c["smoothing"]
            ref = F.binary_cross_entropy_with_logits(z.detach()[:, 0], y * (1 - s) + s / 2)
        else:
            ref = None
        if ref is not None:
            check(f"loss {name}: PyTorch's mean reduction", [c["sum"] / c["wsum"]], [ref.item()], 1e-9)


def keras_adam(c):
    """Keras' Adam (TF2): lr_t = lr sqrt(1-b2^t)/(1-b1^t), eps outside the correction."""
    p = t64(c["p0"])
    m, v = torch.zeros_like(p), torch.zeros_like(p)
    out = []
    for t, st in enumerate(c["steps"], 1):
        g = t64(st["g"]) * c["grad_scale"] + (2 * c["l2"] + c["weight_decay"]) * p * decay_mask(c, p)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - c["lr"] * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (v.sqrt() + c["eps"])
        out.append(p.clone())
    return out


def decay_mask(c, p):
    mask = torch.zeros_like(p)
    for lo, hi in c["decay"]:
        mask[lo:hi] = 1
    return mask


def torch_optim(c):
    """The same steps with torch.optim: one parameter per segment, the decay
    segments in a group with weight_decay, the others without."""
    p0 = t64(c["p0"])
    bounds = [(0, 25), (25, 35), (35, 60)]
    params = [torch.nn.Parameter(p0[lo:hi].clone()) for lo, hi in bounds]
    decay = [params[0], params[2]]
    kind = c["optimizer"]
    if kind == "adam":  # Keras' L2 (grad += 2 l2 p) and weight_decay wd: Adam's 2 l2 + wd
        groups = [{"params": decay, "weight_decay": 2 * c["l2"] + c["weight_decay"]},
                  {"params": [params[1]], "weight_decay": 0.0}]
        opt = torch.optim.Adam(groups, lr=c["lr"], betas=(0.9, 0.999), eps=c["eps"])
    elif kind == "adamw":
        groups = [{"params": decay, "weight_decay": c["weight_decay"]},
                  {"params": [params[1]], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=c["lr"], betas=(0.9, 0.999), eps=c["eps"])
    else:
        groups = [{"params": decay, "weight_decay": c["weight_decay"]},
                  {"params": [params[1]], "weight_decay": 0.0}]
        opt = torch.optim.SGD(groups, lr=c["lr"], momentum=c["momentum"],
                              nesterov=bool(c["nesterov"]))
    out = []
    for st in c["steps"]:
        g = t64(st["g"]) * c["grad_scale"]
        for (lo, hi), prm in zip(bounds, params):
            prm.grad = g[lo:hi].clone()
        if c["clip_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(params, c["clip_norm"])
        opt.step()
        out.append(torch.cat([prm.detach() for prm in params]))
    return out


def check_optim(c):
    name = f"{c['optimizer']} (eps {c['eps']:g}, wd {c['weight_decay']:g}, momentum " \
           f"{c['momentum']:g}, nesterov {c['nesterov']}, clip {c['clip_norm']:g}, l2 {c['l2']:g})"
    if c["optimizer"] == "adam" and c["eps"] >= 1e-4:
        refs = keras_adam(c)  # eps matters: Keras' form, not PyTorch's
    else:
        refs = torch_optim(c)
        if c["optimizer"] == "adam":
            for t, (st, k) in enumerate(zip(c["steps"], keras_adam(c)), 1):
                check(f"{name} step {t} (Keras' formula)", st["p"], k, 1e-6, relative=True)
    for t, (st, ref) in enumerate(zip(c["steps"], refs), 1):
        check(f"{name} step {t}", st["p"], ref, 1e-6, relative=True)


def check_schedule(c):
    lr, epochs, steps = c["lr"], c["epochs"], c["steps"]
    prm = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([prm], lr=lr)
    kind = c["schedule"]
    per_step = kind in ("cosine", "one_cycle")
    if kind == "constant":
        sch = None
    elif kind == "cosine":
        sch = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * steps,
                                                         eta_min=c["lr_min"])
    elif kind == "step":
        sch = torch.optim.lr_scheduler.StepLR(opt, step_size=c["step_epochs"], gamma=c["gamma"])
    elif kind == "exponential":
        sch = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=c["gamma"])
    elif kind == "one_cycle":
        sch = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=lr, total_steps=epochs * steps, pct_start=c["pct_start"],
            div_factor=c["div_factor"], final_div_factor=c["final_div_factor"],
            anneal_strategy="cos", cycle_momentum=False)
    else:
        sch = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="min", factor=c["gamma"], patience=c["patience"], threshold=c["min_delta"],
            threshold_mode="abs", cooldown=0)
    want = []
    for e in range(epochs):
        for k in range(steps):
            want.append(opt.param_groups[0]["lr"])
            opt.step()
            if sch is not None and per_step and len(want) < epochs * steps:
                sch.step()
        if kind == "plateau":
            sch.step(c["values"][e % 12])
        elif sch is not None and not per_step:
            sch.step()
    check(f"schedule {kind}", c["rates"], want, 1e-9, relative=False)


def as_f32(c, keys):
    for k in keys:
        if k in c:
            c[k] = f32(c[k])


def main():
    dump = sys.argv[1]
    seed = sys.argv[2] if len(sys.argv) > 2 else "1"
    doc = json.loads(subprocess.run([dump, seed], check=True, capture_output=True,
                                    text=True).stdout)
    torch.set_default_dtype(torch.float64)
    for c in doc["losses"]:
        as_f32(c, ("delta", "smoothing"))
        check_loss(c)
    for c in doc["optimizers"]:
        as_f32(c, ("lr", "eps", "weight_decay", "momentum", "clip_norm", "l2"))
        check_optim(c)
    for c in doc["schedules"]:
        check_schedule(c)
    n = len(doc["losses"]) + len(doc["optimizers"]) + len(doc["schedules"])
    for f in failures:
        print("task_parity: " + f)
    print(f"task_parity: {n} cases (seed {seed}) against PyTorch {torch.__version__}: "
          f"{'FAILED' if failures else 'all agree'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
