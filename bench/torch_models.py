"""The six model families of ringtrain (docs/models.md) in PyTorch, built from
the same spec, layer for layer: the reference of tests/model_parity.py (forward
and backward against ringtrain's on the same weights) and the baseline of
bench/torch_step.py (samples/s of the same network in PyTorch).

A spec is the "model" object of a ringtrain checkpoint header (rt_ckpt.c)
plus the columns: {"architecture", "categorical": [{"name", "vocab", "dim"}],
"n_cont", "continuous_norm", "hidden", "dropout", "batch_norm", "activation",
"blocks", "width", "hidden_multiplier", "dropout1", "dropout2", "cross_layers",
"deep_layers", "stacked", "cross_dropout", "d_token", "heads",
"attention_dropout", "ffn_multiplier", "ffn_dropout", "residual_dropout",
"ensemble_size", "variant", "head_scale", "bn_momentum", "bn_eps"}.  Parameter names follow ringtrain's
(`ringtrain model summary CKPT --tensors`), so weights copy over by name."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}


def hidden_width(width, multiplier):
    """int(width * multiplier) as ringtrain rounds it (a float's 1e-6 slack)."""
    return int(width * multiplier + 1e-6)


def keras_bn(f, spec):
    """Keras' BatchNormalization: momentum is the moving average's keep rate."""
    return nn.BatchNorm1d(f, eps=spec["bn_eps"], momentum=1.0 - spec["bn_momentum"])


class Inputs(nn.Module):
    """Embeddings of the categorical columns beside the continuous inputs."""

    def __init__(self, spec):
        super().__init__()
        self.emb = nn.ModuleList(nn.Embedding(c["vocab"], c["dim"]) for c in spec["categorical"])
        self.emb_drop = nn.Dropout(spec.get("embedding_dropout", 0.0))
        self.n_cont = spec["n_cont"]
        self.norm = spec["continuous_norm"]
        if self.n_cont and self.norm == "batchnorm":
            self.bn = keras_bn(self.n_cont, spec)
        self.register_buffer("mean", torch.zeros(self.n_cont))
        self.register_buffer("std", torch.ones(self.n_cont))
        # rtdl_num_embeddings: LinearEmbeddings, or PeriodicEmbeddings (PLR, lite = False)
        self.num_emb = spec.get("numeric_embedding", "none") if self.n_cont else "none"
        d, k = spec.get("d_embedding", 24), spec.get("frequencies", 48)
        if self.num_emb == "linear":
            self.num_w = nn.Parameter(torch.zeros(self.n_cont, d))
            self.num_b = nn.Parameter(torch.zeros(self.n_cont, d))
        elif self.num_emb == "periodic":
            self.freq = nn.Parameter(torch.zeros(self.n_cont, k))
            self.num_w = nn.Parameter(torch.zeros(self.n_cont, d, 2 * k))
            self.num_b = nn.Parameter(torch.zeros(self.n_cont, d))
        elif self.num_emb == "piecewise_linear":  # PLE, then Linear_i and ReLU
            t = spec.get("bins", 48)
            self.register_buffer("edges", torch.linspace(-3, 3, t + 1).repeat(self.n_cont, 1))
            self.num_w = nn.Parameter(torch.zeros(self.n_cont, d, t))
            self.num_b = nn.Parameter(torch.zeros(self.n_cont, d))
        n_num = self.n_cont * (d if self.num_emb != "none" else 1)
        self.width = sum(c["dim"] for c in spec["categorical"]) + n_num

    def cont(self, x):
        if self.norm == "batchnorm":
            return self.bn(x)
        if self.norm == "standardize":
            std = torch.where(self.std > 0, self.std, torch.ones_like(self.std))
            return (x - self.mean) / std
        return x

    def forward(self, cat, cont):
        parts = []
        if len(self.emb):
            parts.append(self.emb_drop(torch.cat([e(cat[:, i]) for i, e in enumerate(self.emb)], 1)))
        if self.n_cont:  # PLE reads the raw values (its bins are their quantiles)
            parts.append(self.numeric(cont if self.num_emb == "piecewise_linear" else self.cont(cont)))
        return torch.cat(parts, 1)

    def numeric(self, x):
        """The numeric columns as they are, or embedded (B, n * d_embedding)."""
        if self.num_emb == "linear":
            return (x[:, :, None] * self.num_w + self.num_b).flatten(1)
        if self.num_emb == "piecewise_linear":
            lo, hi = self.edges[:, :-1], self.edges[:, 1:]  # (n, T)
            w = hi - lo
            v = (x[:, :, None] - lo) / torch.where(w > 0, w, torch.ones_like(w))
            t = w.shape[1]
            if t > 1:  # the first bin not clipped below, the last not above
                v = torch.cat([v[:, :, :1].clamp(max=1), v[:, :, 1:-1].clamp(0, 1),
                               v[:, :, -1:].clamp(min=0)], -1) if t > 2 else \
                    torch.cat([v[:, :, :1].clamp(max=1), v[:, :, 1:].clamp(min=0)], -1)
            v = torch.where(w > 0, v, (x[:, :, None] >= lo).to(v.dtype))  # zero-width: a step
            return torch.relu(torch.einsum("bnt,ndt->bnd", v, self.num_w) + self.num_b).flatten(1)
        if self.num_emb == "periodic":
            th = 2 * math.pi * self.freq * x[:, :, None]
            z = torch.cat([torch.cos(th), torch.sin(th)], -1)  # (B, n, 2k)
            return torch.relu(torch.einsum("bnk,ndk->bnd", z, self.num_w) + self.num_b).flatten(1)
        return x

    def names(self, spec):
        out = {f"emb_{c['name']}": e.weight for c, e in zip(spec["categorical"], self.emb)}
        if self.n_cont and self.norm == "batchnorm" and self.num_emb != "piecewise_linear":
            out["batch_norm/gamma"], out["batch_norm/beta"] = self.bn.weight, self.bn.bias
        if self.num_emb == "linear":
            out["numeric/linear/weight"], out["numeric/linear/bias"] = self.num_w, self.num_b
        elif self.num_emb == "periodic":
            out["numeric/periodic/frequencies"] = self.freq
            out["numeric/linear/kernel"], out["numeric/linear/bias"] = self.num_w, self.num_b
        elif self.num_emb == "piecewise_linear":
            out["numeric/linear/kernel"], out["numeric/linear/bias"] = self.num_w, self.num_b
        return out


class Head(nn.Module):
    """pred = head_scale * sigmoid(z)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, z):
        return self.scale * torch.sigmoid(z.squeeze(1))


class Rossmann(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.inputs = Inputs(spec)
        layers, w = [], self.inputs.width
        for h in spec["hidden"]:
            layers += [nn.Linear(w, h), nn.ReLU()]
            w = h
        self.body = nn.Sequential(*layers)
        self.drop = nn.Dropout(spec["dropout"][len(spec["hidden"]) - 1])
        self.output = nn.Linear(w, 1)
        self.head = Head(spec["head_scale"])

    def forward(self, cat, cont):
        return self.head(self.output(self.drop(self.body(self.inputs(cat, cont)))))

    def names(self, spec):
        out = self.inputs.names(spec)
        for i, lin in enumerate(m for m in self.body if isinstance(m, nn.Linear)):
            out[f"dense_{i + 1}/kernel"], out[f"dense_{i + 1}/bias"] = lin.weight, lin.bias
        out["output/kernel"], out["output/bias"] = self.output.weight, self.output.bias
        return out


class MLP(nn.Module):
    """fastai's order inside a layer: Linear, activation, BatchNorm, Dropout."""

    def __init__(self, spec):
        super().__init__()
        self.inputs = Inputs(spec)
        self.blocks, w = nn.ModuleList(), self.inputs.width
        for i, h in enumerate(spec["hidden"]):
            b = nn.Module()
            b.linear, b.act = nn.Linear(w, h), ACTS[spec["activation"]]()
            b.bn = keras_bn(h, spec) if spec["batch_norm"][i] else None
            b.drop = nn.Dropout(spec["dropout"][i])
            self.blocks.append(b)
            w = h
        self.output = nn.Linear(w, 1)
        self.head = Head(spec["head_scale"])

    def forward(self, cat, cont):
        x = self.inputs(cat, cont)
        for b in self.blocks:
            x = b.act(b.linear(x))
            x = b.drop(b.bn(x) if b.bn is not None else x)
        return self.head(self.output(x))

    def names(self, spec):
        out = self.inputs.names(spec)
        for i, b in enumerate(self.blocks):
            out[f"dense_{i + 1}/kernel"], out[f"dense_{i + 1}/bias"] = b.linear.weight, b.linear.bias
            if b.bn is not None:
                out[f"dense_{i + 1}/bn/gamma"], out[f"dense_{i + 1}/bn/beta"] = b.bn.weight, b.bn.bias
        out["output/kernel"], out["output/bias"] = self.output.weight, self.output.bias
        return out


class ResNet(nn.Module):
    """rtdl's ResNet: Linear, blocks (BN, Linear, ReLU, Dropout, Linear, Dropout,
    + skip), then BN, ReLU, Linear."""

    def __init__(self, spec):
        super().__init__()
        self.inputs = Inputs(spec)
        w, h = spec["width"], hidden_width(spec["width"], spec["hidden_multiplier"])
        self.first = nn.Linear(self.inputs.width, w)
        self.blocks = nn.ModuleList()
        for _ in range(spec["blocks"]):
            b = nn.Module()
            b.norm, b.lin1, b.lin2 = keras_bn(w, spec), nn.Linear(w, h), nn.Linear(h, w)
            b.drop1, b.drop2 = nn.Dropout(spec["dropout1"]), nn.Dropout(spec["dropout2"])
            self.blocks.append(b)
        self.norm, self.output = keras_bn(w, spec), nn.Linear(w, 1)
        self.head = Head(spec["head_scale"])

    def forward(self, cat, cont):
        x = self.first(self.inputs(cat, cont))
        for b in self.blocks:
            x = x + b.drop2(b.lin2(b.drop1(F.relu(b.lin1(b.norm(x))))))
        return self.head(self.output(F.relu(self.norm(x))))

    def names(self, spec):
        out = self.inputs.names(spec)
        out["first_layer/kernel"], out["first_layer/bias"] = self.first.weight, self.first.bias
        for i, b in enumerate(self.blocks):
            p = f"block_{i + 1}/"
            out[p + "norm/gamma"], out[p + "norm/beta"] = b.norm.weight, b.norm.bias
            out[p + "linear_first/kernel"], out[p + "linear_first/bias"] = b.lin1.weight, b.lin1.bias
            out[p + "linear_second/kernel"], out[p + "linear_second/bias"] = b.lin2.weight, b.lin2.bias
        out["head/norm/gamma"], out["head/norm/beta"] = self.norm.weight, self.norm.bias
        out["output/kernel"], out["output/bias"] = self.output.weight, self.output.bias
        return out


class DCN2(nn.Module):
    """DCN-V2 as in the revisiting-models code: a first linear layer, cross
    layers dropout(x0 * (W x + b)) + x, ReLU deep layers stacked on them or
    beside them (concatenated), a last linear layer."""

    def __init__(self, spec):
        super().__init__()
        self.inputs = Inputs(spec)
        w = spec["width"]
        self.first = nn.Linear(self.inputs.width, w)
        self.cross = nn.ModuleList(nn.Linear(w, w) for _ in range(spec["cross_layers"]))
        self.cross_drop = nn.Dropout(spec["cross_dropout"])
        self.deep = nn.ModuleList(nn.Linear(w, w) for _ in range(spec["deep_layers"]))
        self.deep_drop = nn.ModuleList(nn.Dropout(spec["dropout"][i]) for i in range(spec["deep_layers"]))
        self.stacked = spec["stacked"]
        self.output = nn.Linear(w if self.stacked else 2 * w, 1)
        self.head = Head(spec["head_scale"])

    def forward(self, cat, cont):
        x0 = self.first(self.inputs(cat, cont))
        x = x0
        for c in self.cross:
            x = self.cross_drop(x0 * c(x)) + x
        d = x if self.stacked else x0
        for lin, drop in zip(self.deep, self.deep_drop):
            d = drop(F.relu(lin(d)))
        return self.head(self.output(d if self.stacked else torch.cat([x, d], 1)))

    def names(self, spec):
        out = self.inputs.names(spec)
        out["first_linear/kernel"], out["first_linear/bias"] = self.first.weight, self.first.bias
        for i, c in enumerate(self.cross):
            out[f"cross_{i + 1}/linear/kernel"], out[f"cross_{i + 1}/linear/bias"] = c.weight, c.bias
        for i, lin in enumerate(self.deep):
            out[f"deep_{i + 1}/kernel"], out[f"deep_{i + 1}/bias"] = lin.weight, lin.bias
        out["output/kernel"], out["output/bias"] = self.output.weight, self.output.bias
        return out


class FTTransformer(nn.Module):
    """rtdl's FT-Transformer: numerical and categorical feature tokens with
    biases, [CLS] appended last; pre-LayerNorm blocks (none before the first
    block's attention), multi-head attention (an output projection with more
    than one head), ReGLU feed-forward; the [CLS] token -> LayerNorm -> ReLU ->
    Linear."""

    def __init__(self, spec):
        super().__init__()
        d, cats = spec["d_token"], spec["categorical"]
        self.n_cont, self.d, self.heads = spec["n_cont"], d, spec["heads"]
        self.norm = spec["continuous_norm"]
        if self.n_cont and self.norm == "batchnorm":
            self.bn = keras_bn(self.n_cont, spec)
        self.register_buffer("mean", torch.zeros(self.n_cont))
        self.register_buffer("std", torch.ones(self.n_cont))
        # numeric_embedding periodic or piecewise_linear: each column's token
        # is its embedding of d_token values (linear: the tokens below)
        self.num_emb = None
        if self.n_cont and spec.get("numeric_embedding", "none") in ("periodic", "piecewise_linear"):
            self.num_emb = Inputs(dict(spec, categorical=[], d_embedding=d))
        elif self.n_cont:
            self.num_weight = nn.Parameter(torch.randn(self.n_cont, d) * 0.1)
            self.num_bias = nn.Parameter(torch.randn(self.n_cont, d) * 0.1)
        self.emb = nn.ModuleList(nn.Embedding(c["vocab"], d) for c in cats)
        if cats:
            self.cat_bias = nn.Parameter(torch.randn(len(cats), d) * 0.1)
        self.cls = nn.Parameter(torch.randn(1, d) * 0.1)
        hid = hidden_width(d, spec["ffn_multiplier"])
        self.blocks = nn.ModuleList()
        for i in range(spec["blocks"]):
            b = nn.Module()
            b.attn_norm = nn.LayerNorm(d) if i else None
            b.qkv = nn.Linear(d, 3 * d)
            b.out = nn.Linear(d, d) if self.heads > 1 else None
            b.attn_drop = nn.Dropout(spec["attention_dropout"])
            b.res_drop = nn.Dropout(spec["residual_dropout"])
            b.ffn_norm, b.ffn1, b.ffn2 = nn.LayerNorm(d), nn.Linear(d, 2 * hid), nn.Linear(hid, d)
            b.ffn_drop = nn.Dropout(spec["ffn_dropout"])
            self.blocks.append(b)
        self.head_norm, self.output = nn.LayerNorm(d), nn.Linear(d, 1)
        self.head = Head(spec["head_scale"])

    def tokens(self, cat, cont):
        parts = []
        if self.num_emb is not None:  # PLE reads the raw values
            x = cont if self.num_emb.num_emb == "piecewise_linear" else self.num_emb.cont(cont)
            parts.append(self.num_emb.numeric(x).reshape(cont.shape[0], self.n_cont, self.d))
        elif self.n_cont:
            if self.norm == "batchnorm":
                cont = self.bn(cont)
            elif self.norm == "standardize":
                cont = (cont - self.mean) / torch.where(self.std > 0, self.std, torch.ones_like(self.std))
            parts.append(self.num_weight[None] * cont[:, :, None] + self.num_bias[None])
        if len(self.emb):
            e = torch.stack([m(cat[:, i]) for i, m in enumerate(self.emb)], 1)
            parts.append(e + self.cat_bias[None])
        parts.append(self.cls[None].expand(cat.shape[0] if cat.numel() else cont.shape[0], 1, self.d))
        return torch.cat(parts, 1)

    def attention(self, b, x):
        n, t, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = b.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(n, t, h, dh).transpose(1, 2) for z in (q, k, v))
        p = b.attn_drop(F.softmax(q @ k.transpose(2, 3) / math.sqrt(dh), dim=-1))
        o = (p @ v).transpose(1, 2).reshape(n, t, d)
        return b.out(o) if b.out is not None else o

    def forward(self, cat, cont):
        x = self.tokens(cat, cont)
        for b in self.blocks:
            a = self.attention(b, b.attn_norm(x) if b.attn_norm is not None else x)
            x = x + b.res_drop(a)
            f = b.ffn1(b.ffn_norm(x))
            f1, f2 = f.chunk(2, dim=-1)
            x = x + b.res_drop(b.ffn2(b.ffn_drop(f1 * F.relu(f2))))
        return self.head(self.output(F.relu(self.head_norm(x[:, -1]))))

    def names(self, spec):
        out = {}
        if self.num_emb is not None:
            out.update(self.num_emb.names(spec))
        elif self.n_cont:
            out["tokenizer/num_weight"], out["tokenizer/num_bias"] = self.num_weight, self.num_bias
            if self.norm == "batchnorm":
                out["batch_norm/gamma"], out["batch_norm/beta"] = self.bn.weight, self.bn.bias
        for c, e in zip(spec["categorical"], self.emb):
            out[f"emb_{c['name']}"] = e.weight
        if len(self.emb):
            out["tokenizer/cat_bias"] = self.cat_bias
        out["tokenizer/cls"] = self.cls
        for i, b in enumerate(self.blocks):
            p = f"block_{i + 1}/"
            if b.attn_norm is not None:
                out[p + "attention_norm/gamma"], out[p + "attention_norm/beta"] = b.attn_norm.weight, b.attn_norm.bias
            out[p + "attention/qkv/kernel"], out[p + "attention/qkv/bias"] = b.qkv.weight, b.qkv.bias
            if b.out is not None:
                out[p + "attention/out/kernel"], out[p + "attention/out/bias"] = b.out.weight, b.out.bias
            out[p + "ffn_norm/gamma"], out[p + "ffn_norm/beta"] = b.ffn_norm.weight, b.ffn_norm.bias
            out[p + "ffn/linear_first/kernel"], out[p + "ffn/linear_first/bias"] = b.ffn1.weight, b.ffn1.bias
            out[p + "ffn/linear_second/kernel"], out[p + "ffn/linear_second/bias"] = b.ffn2.weight, b.ffn2.bias
        out["head/norm/gamma"], out["head/norm/beta"] = self.head_norm.weight, self.head_norm.bias
        out["output/kernel"], out["output/bias"] = self.output.weight, self.output.bias
        return out


class TabM(nn.Module):
    """TabM (Gorishniy et al., ICLR 2025), written from the paper: k MLPs
    sharing their weights, members as a second dimension (B, k, D); tabm:
    BatchEnsemble layers ((x * r) W) * s + b in every block, mini: one x * r
    before plain shared blocks; each member's own output layer.  members()
    gives the k predictions (what the loss averages), forward() their mean."""

    def __init__(self, spec):
        super().__init__()
        self.inputs = Inputs(spec)
        self.k, w, d = spec["ensemble_size"], spec["width"], self.inputs.width
        self.mini = spec["variant"] == "mini"
        nb = spec["blocks"]
        self.r0 = nn.Parameter(torch.ones(self.k, d)) if self.mini else None
        ins = [d] + [w] * (nb - 1)
        self.linears = nn.ModuleList(nn.Linear(i, w, bias=self.mini) for i in ins)
        if not self.mini:
            self.r = nn.ParameterList(nn.Parameter(torch.ones(self.k, i)) for i in ins)
            self.s = nn.ParameterList(nn.Parameter(torch.ones(self.k, w)) for _ in ins)
            self.b = nn.ParameterList(nn.Parameter(torch.zeros(self.k, w)) for _ in ins)
        self.drops = nn.ModuleList(nn.Dropout(spec["dropout"][i]) for i in range(nb))
        n_out = spec.get("n_out", 1)
        self.out_w = nn.Parameter(torch.zeros(self.k, n_out, w))
        self.out_b = nn.Parameter(torch.zeros(self.k, n_out))
        self.scale = spec["head_scale"] if spec.get("head", "scaled_sigmoid") == "scaled_sigmoid" else None

    def members(self, cat, cont):
        x = self.inputs(cat, cont).unsqueeze(1).expand(-1, self.k, -1)
        if self.mini:
            x = x * self.r0
        for i, lin in enumerate(self.linears):
            if self.mini:
                x = torch.relu(lin(x))
            else:
                x = torch.relu(lin(x * self.r[i]) * self.s[i] + self.b[i])
            x = self.drops[i](x)
        z = torch.einsum("bkd,kod->bko", x, self.out_w) + self.out_b
        if self.scale is not None:
            return self.scale * torch.sigmoid(z.squeeze(-1))
        return z

    def forward(self, cat, cont):
        return self.members(cat, cont).mean(1)

    def names(self, spec):
        out = self.inputs.names(spec)
        if self.mini:
            out["ensemble/r"] = self.r0
        for i, lin in enumerate(self.linears):
            p = f"block_{i + 1}/"
            out[p + "linear/kernel"] = lin.weight
            if self.mini:
                out[p + "linear/bias"] = lin.bias
            else:
                out[p + "r"], out[p + "s"], out[p + "bias"] = self.r[i], self.s[i], self.b[i]
        out["output/kernel"], out["output/bias"] = self.out_w, self.out_b
        return out


FAMILIES = {"rossmann": Rossmann, "mlp": MLP, "resnet": ResNet, "dcn2": DCN2,
            "ft_transformer": FTTransformer, "tabm": TabM}


def set_standardize(model, mean, std):
    """continuous_norm = standardize: the training rows' mean and std."""
    holder = model if isinstance(model, FTTransformer) else model.inputs
    if isinstance(model, FTTransformer) and model.num_emb is not None:
        holder = model.num_emb
    with torch.no_grad():
        holder.mean.copy_(torch.as_tensor(mean, dtype=holder.mean.dtype))
        holder.std.copy_(torch.as_tensor(std, dtype=holder.std.dtype))


def numeric_inputs(model):
    """The module holding the numeric embeddings' buffers (PLE's edges)."""
    return model.num_emb if isinstance(model, FTTransformer) else model.inputs


def build(spec):
    """The spec's network; .names(spec) maps ringtrain's tensor names to its parameters."""
    return FAMILIES[spec["architecture"]](spec)
