/* rt_ckpt.c — see rt_ckpt.h. */
#include "rt_data_io.h"
#include "rt_ckpt.h"
#include "rt_dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rt_file.h"
#include "rt_json.h"
#include "rt_endian.h"
#include "rt_s3.h"

static const char MAGIC[8] = {'R', 'T', 'C', 'K', 'P', 'T', '1', 0};
static const char END[8] = {'R', 'T', 'C', 'K', 'E', 'N', 'D', 0};
#define MAX_FILE (16ull << 30)

void rt_ckpt_free(rt_ckpt *c)
{
    for (int i = 0; c->values && c->values_owned && i < c->spec.n_cat; i++) {
        for (int k = 0; c->values[i] && k < c->spec.vocab[i]; k++)
            free(c->values[i][k]);
        free(c->values[i]);
    }
    free(c->values);
    c->values = NULL;
    free(c->cat_names);
    c->cat_names = NULL;
    for (int k = 0; c->values_owned && c->classes && k < c->spec.n_classes; k++)
        free(c->classes[k]);
    if (c->values_owned) {
        free(c->classes);
        free(c->cont_names);
    }
    c->classes = NULL;
    c->cont_names = NULL;
    free(c->params);
    free(c->adam_m);
    free(c->adam_v);
    free(c->buffers);
    c->params = c->adam_m = c->adam_v = c->buffers = NULL;
}

rt_status rt_ckpt_from_model(rt_ckpt *c, rt_model *m, char *err)
{
    c->spec = *rt_model_get_spec(m);
    c->nparams = rt_model_num_params(m);
    c->nbuffers = rt_model_num_buffers(m);
    c->params = malloc((size_t)c->nparams * 4);
    c->adam_m = malloc((size_t)c->nparams * 4);
    c->adam_v = malloc((size_t)c->nparams * 4);
    c->buffers = malloc((size_t)(c->nbuffers ? c->nbuffers : 1) * 4);
    if (!c->params || !c->adam_m || !c->adam_v || !c->buffers) {
        rt_ckpt_free(c);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for a checkpoint");
    }
    return rt_model_get_state(m, c->params, c->adam_m, c->adam_v, c->buffers, &c->step, err);
}

rt_status rt_ckpt_fits(const rt_ckpt *c, const rt_model *m, char *err)
{
    /* the header's counts are the file's word (a crafted file can pass
     * every size and CRC check with counts its spec does not have): the
     * tensors are copied by the model's sizes, so they must be the same */
    if (c->nparams != rt_model_num_params(m) || c->nbuffers != rt_model_num_buffers(m))
        return rt_err(err, RT_ERR_CORRUPT,
                      "checkpoint holds %lld parameters and %lld buffer values, its model "
                      "has %lld and %lld: damaged or not written for this model",
                      (long long)c->nparams, (long long)c->nbuffers,
                      (long long)rt_model_num_params(m), (long long)rt_model_num_buffers(m));
    return RT_OK;
}

rt_status rt_ckpt_to_model(const rt_ckpt *c, rt_model *m, char *err)
{
    rt_status st = rt_ckpt_fits(c, m, err);
    if (st != RT_OK)
        return st;
    return rt_model_set_state(m, c->params, c->adam_m, c->adam_v, c->buffers, &c->step, err);
}


static char *header_json(const rt_ckpt *c)
{
    const rt_model_spec *s = &c->spec;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "format", "ringtrain-checkpoint");
    rt_jw_kint(&w, "epoch", c->epoch);
    rt_jw_kint(&w, "step", c->step);
    rt_jw_kint(&w, "world_size", c->world_size);
    if (isfinite(c->best_val_loss))
        rt_jw_knum(&w, "best_val_loss", c->best_val_loss);
    rt_jw_kstr(&w, "monitor", c->monitor[0] ? c->monitor : "val_loss");
    rt_jw_kint(&w, "best_epoch", c->best_epoch);
    /* the plateau's state, once it has one (lr_factor 0: not set by a trainer) */
    if (c->lr_factor > 0 && (c->lr_factor != 1.0 || c->plateau_wait != 0 ||
                             isfinite(c->plateau_best))) {
        rt_jw_knum(&w, "lr_factor", c->lr_factor);
        rt_jw_kint(&w, "plateau_wait", c->plateau_wait);
        if (isfinite(c->plateau_best))
            rt_jw_knum(&w, "plateau_best", c->plateau_best);
    }
    rt_jw_knum(&w, "max_label", c->max_label);
    rt_jw_kstr(&w, "label_transform", c->label_transform);
    rt_jw_kstr(&w, "label", c->label);
    bool stdz = false;
    rt_label_transform_parse(c->label_transform, NULL, &stdz, NULL);
    if (stdz) {
        rt_jw_knum(&w, "label_mean", c->label_mean);
        rt_jw_knum(&w, "label_std", c->label_std);
    }
    if (c->label_lo <= c->label_hi) {
        rt_jw_key(&w, "label_range");
        rt_jw_arr(&w);
        rt_jw_num(&w, c->label_lo);
        rt_jw_num(&w, c->label_hi);
        rt_jw_arr_end(&w);
    }
    if (c->classes) {
        rt_jw_key(&w, "classes");
        rt_jw_arr(&w);
        for (int k = 0; k < s->n_classes; k++)
            rt_jw_str(&w, c->classes[k]);
        rt_jw_arr_end(&w);
    }
    rt_jw_key(&w, "categorical");
    rt_jw_arr(&w);
    for (int i = 0; i < s->n_cat; i++) {
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "name", rt_model_cat_name(s, i));
        rt_jw_kint(&w, "vocab", s->vocab[i]);
        rt_jw_kint(&w, "dim", s->emb_dim[i]);
        if (c->values && c->values[i]) {
            rt_jw_key(&w, "values");
            rt_jw_arr(&w);
            for (int k = 0; k < s->vocab[i]; k++)
                if (c->values[i][k])
                    rt_jw_str(&w, c->values[i][k]);
                else
                    rt_jw_null(&w);
            rt_jw_arr_end(&w);
        }
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    rt_jw_key(&w, "continuous");
    rt_jw_arr(&w);
    for (int i = 0; i < c->n_cont; i++)
        rt_jw_str(&w, c->cont_names[i]);
    rt_jw_arr_end(&w);
    rt_jw_key(&w, "model"); /* the network: a reader rebuilds it from this alone */
    rt_model_spec_json(s, &w);
    rt_jw_kint(&w, "params", c->nparams);
    rt_jw_kint(&w, "buffers", c->nbuffers);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

rt_status rt_ckpt_encode(const rt_ckpt *c, rt_ckpt_bytes *b, const char *name, char *err)
{
    memset(b, 0, sizeof *b);
    char *hdr = header_json(c);
    size_t np = (size_t)c->nparams * 4, nb = (size_t)c->nbuffers * 4;
    size_t raw_len = 3 * np + nb;
    unsigned char *raw = malloc(raw_len ? raw_len : 1);
    uLong bound = compressBound((uLong)raw_len);
    unsigned char *comp = malloc(bound + 32);
    if (!hdr || !raw || !comp) {
        free(hdr);
        free(raw);
        free(comp);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    memcpy(raw, c->params, np);
    memcpy(raw + np, c->adam_m, np);
    memcpy(raw + 2 * np, c->adam_v, np);
    if (nb)
        memcpy(raw + 3 * np, c->buffers, nb);
    uLongf clen = bound;
    int zr = compress2(comp, &clen, raw, (uLong)raw_len, 1);
    free(raw);
    if (zr != Z_OK) {
        free(hdr);
        free(comp);
        return rt_err(err, RT_ERR_IO, "%s: zlib failed (%d)", name, zr);
    }
    size_t hl = strlen(hdr);
    memcpy(b->head, MAGIC, 8);
    rt_put_le32(b->head + 8, 1);
    rt_put_le32(b->head + 12, (uint32_t)hl);
    rt_put_le64(b->lens, raw_len);
    rt_put_le64(b->lens + 8, clen);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, b->head, 16);
    crc = crc32(crc, (const Bytef *)hdr, (uInt)hl);
    crc = crc32(crc, b->lens, 16);
    for (uLong off = 0; off < clen; off += 1u << 30) /* crc32 takes uInt lengths */
        crc = crc32(crc, comp + off, (uInt)(clen - off < (1u << 30) ? clen - off : (1u << 30)));
    rt_put_le32(b->tail, (uint32_t)crc);
    memcpy(b->tail + 4, END, 8);
    b->header = hdr;
    b->data = comp;
    b->iov[0] = (rt_iov){b->head, 16};
    b->iov[1] = (rt_iov){hdr, hl};
    b->iov[2] = (rt_iov){b->lens, 16};
    b->iov[3] = (rt_iov){comp, clen};
    b->iov[4] = (rt_iov){b->tail, 12};
    return RT_OK;
}

void rt_ckpt_bytes_free(rt_ckpt_bytes *b)
{
    free(b->header);
    free(b->data);
    memset(b, 0, sizeof *b);
}

rt_status rt_ckpt_write(const char *path, const rt_ckpt *c, char *err)
{
    rt_ckpt_bytes b;
    rt_status st = rt_ckpt_encode(c, &b, path, err);
    if (st == RT_OK)
        st = rt_write_atomic(path, b.iov, RT_CKPT_PIECES, err);
    rt_ckpt_bytes_free(&b);
    return st;
}

static rt_status damaged(char *err, const char *name, const char *what)
{
    return rt_err(err, RT_ERR_INVALID, "checkpoint %s is damaged: %s; it was not loaded", name,
                  what);
}

/* The "model" object: the architecture and its keys.  A checkpoint from
 * before the layer graph has no architecture (rossmann), one dropout rate
 * (after the last hidden layer) and one embedding width. */
static rt_status parse_model(const rt_json *m, rt_model_spec *s, const char *name, char *err)
{
    const rt_json *hid = rt_json_get(m, "hidden"), *drop = rt_json_get(m, "dropout"),
                  *bn = rt_json_get(m, "batch_norm");
    const char *arch = rt_json_str(rt_json_get(m, "architecture"), "rossmann");
    int a = rt_model_name_index(rt_arch_names, RT_ARCH_COUNT, arch);
    if (a < 0)
        return rt_err(err, RT_ERR_INVALID, "checkpoint %s holds a model of architecture '%s', "
                      "which this build does not know", name, arch);
    s->arch = (rt_arch)a;
    if (rt_json_len(hid) > RT_MODEL_MAX_HIDDEN || rt_json_len(drop) > RT_MODEL_MAX_HIDDEN ||
        rt_json_len(bn) > RT_MODEL_MAX_HIDDEN)
        return damaged(err, name, "its model has more hidden layers than a model can");
    s->n_hidden = (int)rt_json_len(hid);
    int64_t v;
    for (int i = 0; i < s->n_hidden; i++) {
        if (!rt_json_int(rt_json_at(hid, (size_t)i), &v) || v < 1 || v > 65536)
            return damaged(err, name, "a hidden layer without a width");
        s->hidden[i] = (int)v;
    }
    memset(s->dropout, 0, sizeof s->dropout);
    if (rt_json_type_of(drop) == RT_JSON_ARRAY)
        for (size_t i = 0; i < rt_json_len(drop); i++)
            s->dropout[i] = (float)rt_json_num(rt_json_at(drop, i), 0);
    else if (s->n_hidden > 0)
        s->dropout[s->n_hidden - 1] = (float)rt_json_num(drop, 0);
    for (size_t i = 0; i < rt_json_len(bn); i++)
        s->batch_norm[i] = rt_json_bool(rt_json_at(bn, i), false);
    int act = rt_model_name_index(rt_act_names, RT_ACT_COUNT,
                                  rt_json_str(rt_json_get(m, "activation"), "relu"));
    int norm = rt_model_name_index(rt_cont_norm_names, RT_CONT_NORM_COUNT,
                                   rt_json_str(rt_json_get(m, "continuous_norm"), "batchnorm"));
    if (act < 0 || norm < 0)
        return damaged(err, name, "its model's activation or continuous_norm is unknown");
    s->activation = (rt_act)act;
    s->cont_norm = (rt_cont_norm)norm;
    /* rt_model_keys.h's keys and n_quantiles: absent ones keep
     * rt_model_spec_defaults' values (a checkpoint from before the key) */
    const char *bad = rt_model_spec_keys_read(s, m);
    if (bad) {
        char what[96];
        snprintf(what, sizeof what, "its model's %s is of the wrong type or unknown", bad);
        return damaged(err, name, what);
    }
    const rt_json *nq = rt_json_get(m, "n_quantiles");
    if (nq && (!rt_json_int(nq, &v) || v < 0 || v > INT32_MAX))
        return damaged(err, name, "its model's n_quantiles is not an integer");
    if (nq)
        s->n_quantiles = (int)v;
    s->head_scale = (float)rt_json_num(rt_json_get(m, "head_scale"), s->head_scale);
    /* the task's keys (absent: Rossmann's head and loss) */
    int head = rt_model_name_index(rt_head_names, RT_HEAD_COUNT,
                                   rt_json_str(rt_json_get(m, "head"), "scaled_sigmoid"));
    int loss = rt_model_name_index(rt_loss_names, RT_LOSS_COUNT,
                                   rt_json_str(rt_json_get(m, "loss"), "mae"));
    int64_t nout = 1, ncls = 0;
    rt_json_get_int(m, "n_out", &nout);
    rt_json_get_int(m, "n_classes", &ncls);
    const rt_json *cw = rt_json_get(m, "class_weight");
    if (head < 0 || loss < 0 || nout < 1 || nout > RT_MODEL_MAX_CLASSES || ncls < 0 ||
        ncls > RT_MODEL_MAX_CLASSES || (cw && (int64_t)rt_json_len(cw) != ncls))
        return damaged(err, name, "its model's head, loss, outputs or classes are unknown");
    s->head = (rt_head)head;
    s->loss = (rt_loss)loss;
    s->n_out = (int)nout;
    s->n_classes = (int)ncls;
    s->huber_delta = (float)rt_json_num(rt_json_get(m, "huber_delta"), 1.0);
    s->label_smoothing = (float)rt_json_num(rt_json_get(m, "label_smoothing"), 0.0);
    s->class_weighted = cw != NULL;
    for (int k = 0; cw && k < s->n_classes; k++)
        s->class_weight[k] = (float)rt_json_num(rt_json_at(cw, (size_t)k), 1.0);
    s->weighted = rt_json_bool(rt_json_get(m, "weighted"), false);
    if (rt_json_get_int(m, "seed", &v))
        s->seed = (uint64_t)v;
    return RT_OK;
}

static rt_status parse_header(const rt_json *h, rt_ckpt *c, const char *name, char *err)
{
    rt_model_spec *s = &c->spec;
    rt_model_spec_defaults(s);
    const rt_json *m = rt_json_get(h, "model"), *cats = rt_json_get(h, "categorical"),
                  *conts = rt_json_get(h, "continuous");
    int64_t v, dim = 0;
    if (strcmp(rt_json_str(rt_json_get(h, "format"), ""), "ringtrain-checkpoint") != 0 ||
        !rt_json_get_int(h, "epoch", &c->epoch) || !rt_json_get_int(h, "step", &c->step) ||
        !rt_json_get_int(h, "params", &c->nparams) ||
        !rt_json_get_int(h, "buffers", &c->nbuffers) || rt_json_len(cats) > RT_MODEL_MAX_CAT ||
        rt_json_len(conts) > RT_MODEL_MAX_CONT || rt_json_type_of(m) != RT_JSON_OBJECT ||
        !rt_json_get_int(m, "embedding_dim", &dim))
        return damaged(err, name, "its header is not a ringtrain checkpoint header");
    rt_status st = parse_model(m, s, name, err);
    if (st != RT_OK)
        return st;
    rt_json_get_int(h, "world_size", &c->world_size);
    rt_json_get_int(h, "best_epoch", &c->best_epoch);
    c->best_val_loss = rt_json_num(rt_json_get(h, "best_val_loss"), INFINITY);
    snprintf(c->monitor, sizeof c->monitor, "%s",
             rt_json_str(rt_json_get(h, "monitor"), "val_loss"));
    c->lr_factor = rt_json_num(rt_json_get(h, "lr_factor"), 1.0);
    c->plateau_wait = 0;
    rt_json_get_int(h, "plateau_wait", &c->plateau_wait);
    c->plateau_best = rt_json_num(rt_json_get(h, "plateau_best"), NAN);
    if (!(c->lr_factor > 0 && c->lr_factor <= 1) || c->plateau_wait < 0)
        return damaged(err, name, "its lr_factor or plateau_wait is out of range");
    c->max_label = rt_json_num(rt_json_get(h, "max_label"), 0);
    snprintf(c->label_transform, sizeof c->label_transform, "%s",
             rt_json_str(rt_json_get(h, "label_transform"), "none"));
    snprintf(c->label, sizeof c->label, "%s", rt_json_str(rt_json_get(h, "label"), ""));
    c->label_mean = rt_json_num(rt_json_get(h, "label_mean"), 0);
    c->label_std = rt_json_num(rt_json_get(h, "label_std"), 1);
    const rt_json *range = rt_json_get(h, "label_range");
    c->label_lo = rt_json_num(rt_json_at(range, 0), 1);
    c->label_hi = rt_json_num(rt_json_at(range, 1), 0);
    const rt_json *cls = rt_json_get(h, "classes");
    if (s->n_classes > 0) {
        if ((int)rt_json_len(cls) != s->n_classes)
            return damaged(err, name, "its model has classes but the header does not name them");
        c->classes = calloc((size_t)s->n_classes, sizeof *c->classes);
        c->values_owned = true;
        for (int k = 0; c->classes && k < s->n_classes; k++)
            c->classes[k] = strdup(rt_json_str(rt_json_at(cls, (size_t)k), ""));
        if (!c->classes)
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    const int ncat = (int)rt_json_len(cats);
    if (ncat > 0 && (!(c->cat_names = calloc((size_t)ncat, sizeof *c->cat_names)) ||
                     !(c->values = calloc((size_t)ncat, sizeof *c->values))))
        return rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", name);
    s->n_cat = ncat; /* (rt_ckpt_free walks values up to n_cat) */
    s->cat_names = c->cat_names;
    for (int i = 0; i < s->n_cat; i++) {
        const rt_json *e = rt_json_at(cats, (size_t)i);
        snprintf(c->cat_names[i], sizeof c->cat_names[i], "%s",
                 rt_json_str(rt_json_get(e, "name"), ""));
        if (!rt_json_get_int(e, "vocab", &v) || v < 1 || v > INT32_MAX)
            return damaged(err, name, "a categorical column without a vocabulary size");
        s->vocab[i] = (int32_t)v;
        int64_t w = dim; /* one width for every column before per-column widths */
        rt_json_get_int(e, "dim", &w);
        s->emb_dim[i] = (int32_t)(w >= 0 && w <= INT32_MAX ? w : 0);
        const rt_json *vals = rt_json_get(e, "values");
        if (vals && (int64_t)rt_json_len(vals) != v)
            return damaged(err, name, "a categorical column whose values are not its vocabulary");
        if (vals) {
            c->values_owned = true;
            if (!(c->values[i] = calloc((size_t)v, sizeof *c->values[i])))
                return rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", name);
            for (int64_t k = 0; k < v; k++) {
                const char *x = rt_json_str(rt_json_at(vals, (size_t)k), NULL); /* null: NULL */
                if (x && !(c->values[i][k] = strdup(x)))
                    return rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", name);
            }
        }
    }
    c->n_cont = s->n_cont = (int)rt_json_len(conts);
    c->values_owned = true; /* what is read here is the checkpoint's own */
    if (!(c->cont_names = calloc((size_t)(c->n_cont ? c->n_cont : 1), sizeof *c->cont_names)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", name);
    for (int i = 0; i < c->n_cont; i++)
        snprintf(c->cont_names[i], sizeof c->cont_names[i], "%s",
                 rt_json_str(rt_json_at(conts, (size_t)i), ""));
    char why[RT_ERR_LEN];
    if (rt_model_spec_check(s, why) != RT_OK)
        return damaged(err, name, why);
    if (c->nparams <= 0 || c->nbuffers < 0 || c->nbuffers > c->nparams)
        return damaged(err, name, "impossible tensor sizes in its header");
    return RT_OK;
}

rt_status rt_ckpt_parse(const void *data, size_t len, const char *name, rt_ckpt *c, char *err)
{
    memset(c, 0, sizeof *c);
    const unsigned char *p = data;
    if (len < 16 || memcmp(p, MAGIC, 8) != 0)
        return rt_err(err, RT_ERR_INVALID, "%s is not a ringtrain checkpoint", name);
    if (rt_get_le32(p + 8) != 1)
        return rt_err(err, RT_ERR_INVALID, "%s: checkpoint version %u, this build reads 1", name,
                      rt_get_le32(p + 8));
    if (len < 16 + 16 + 12 || memcmp(p + len - 8, END, 8) != 0)
        return damaged(err, name, "it is truncated (no end marker)");
    size_t hl = rt_get_le32(p + 12);
    if (hl > len - 44)
        return damaged(err, name, "its header length is impossible");
    const unsigned char *lens = p + 16 + hl;
    uint64_t raw_len = rt_get_le64(lens), clen = rt_get_le64(lens + 8);
    if (clen != len - 16 - hl - 16 - 12)
        return damaged(err, name, "its length does not match its contents (truncated?)");
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < len - 12; off += 1u << 30)
        crc = crc32(crc, p + off, (uInt)(len - 12 - off < (1u << 30) ? len - 12 - off : (1u << 30)));
    if ((uint32_t)crc != rt_get_le32(p + len - 12))
        return damaged(err, name, "CRC mismatch");
    rt_json *h = NULL;
    char jerr[RT_ERR_LEN];
    if (rt_json_parse((const char *)p + 16, hl, &h, jerr) != RT_OK)
        return damaged(err, name, jerr);
    rt_status st = parse_header(h, c, name, err);
    rt_json_free(h);
    if (st != RT_OK) {
        rt_ckpt_free(c); /* the values read so far */
        return st;
    }
    if (raw_len != (uint64_t)(3 * c->nparams + c->nbuffers) * 4) {
        rt_ckpt_free(c);
        return damaged(err, name, "its tensors do not have the sizes its header gives");
    }
    unsigned char *raw = malloc(raw_len);
    uLongf got = (uLongf)raw_len;
    if (!raw || uncompress(raw, &got, lens + 16, (uLong)clen) != Z_OK || got != raw_len) {
        free(raw);
        rt_ckpt_free(c);
        return damaged(err, name, "its tensors do not decompress");
    }
    size_t np = (size_t)c->nparams * 4, nb = (size_t)c->nbuffers * 4;
    c->params = malloc(np);
    c->adam_m = malloc(np);
    c->adam_v = malloc(np);
    c->buffers = malloc(nb ? nb : 1);
    if (!c->params || !c->adam_m || !c->adam_v || !c->buffers) {
        free(raw);
        rt_ckpt_free(c);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    memcpy(c->params, raw, np);
    memcpy(c->adam_m, raw + np, np);
    memcpy(c->adam_v, raw + 2 * np, np);
    memcpy(c->buffers, raw + 3 * np, nb);
    free(raw);
    return RT_OK;
}

rt_status rt_ckpt_read(const char *path, rt_ckpt *c, char *err)
{
    char *data = NULL;
    size_t len = 0;
    rt_status st = rt_data_read_file(path, MAX_FILE, &data, &len, err);
    if (st != RT_OK)
        return st;
    st = rt_ckpt_parse(data, len, path, c, err);
    free(data);
    return st;
}

rt_status rt_ckpt_read_header(const char *path, rt_ckpt *c, char *err)
{
    memset(c, 0, sizeof *c);
    rt_src *src = NULL;
    int64_t size = 0;
    unsigned char head[16];
    char *text = NULL;
    rt_status st = rt_src_open(path, &src, &size, err);
    if (st == RT_OK && size < 16 + 44)
        st = rt_err(err, RT_ERR_INVALID, "%s is not a ringtrain checkpoint", path);
    if (st == RT_OK)
        st = rt_src_read_at(src, head, sizeof head, 0, err);
    if (st == RT_OK && memcmp(head, MAGIC, 8) != 0)
        st = rt_err(err, RT_ERR_INVALID, "%s is not a ringtrain checkpoint", path);
    else if (st == RT_OK && rt_get_le32(head + 8) != 1)
        st = rt_err(err, RT_ERR_INVALID, "%s: checkpoint version %u, this build reads 1", path,
                    rt_get_le32(head + 8));
    const size_t hl = st == RT_OK ? rt_get_le32(head + 12) : 0;
    if (st == RT_OK && (int64_t)hl > size - 44)
        st = damaged(err, path, "its header length is impossible");
    if (st == RT_OK && !(text = malloc(hl + 1)))
        st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    if (st == RT_OK)
        st = rt_src_read_at(src, text, hl, 16, err);
    rt_src_close(src);
    rt_json *h = NULL;
    char jerr[RT_ERR_LEN];
    if (st == RT_OK && rt_json_parse(text, hl, &h, jerr) != RT_OK)
        st = damaged(err, path, jerr);
    free(text);
    if (st == RT_OK && (st = parse_header(h, c, path, err)) != RT_OK)
        rt_ckpt_free(c);
    rt_json_free(h);
    return st;
}

rt_status rt_ckpt_find_header(const char *store, char *path, size_t len, rt_ckpt *c, char *err)
{
    static const char *const names[] = {"best.ckpt", "last.ckpt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!rt_s3_uri_join(path, len, store, names[i]))
            return rt_err(err, RT_ERR_INVALID, "%s: too long a path", store);
        rt_status st = rt_ckpt_read_header(path, c, err);
        if (st != RT_ERR_NOTFOUND)
            return st;
    }
    return rt_err(err, RT_ERR_NOTFOUND, "%s has no best.ckpt nor last.ckpt", store);
}

rt_status rt_ckpt_compatible(const rt_ckpt *c, const rt_model_spec *s, char *err)
{
    char what[RT_ERR_LEN];
    if (!rt_model_spec_same_net(&c->spec, s, what, sizeof what))
        return rt_err(err, RT_ERR_INVALID, "the checkpoint is of another model: %s", what);
    return RT_OK;
}

rt_status rt_ckpt_check_values(const rt_ckpt *c, const rt_dataset *ds, char *err)
{
    for (int i = 0; i < c->spec.n_cat; i++) {
        const rt_ds_column *col = rt_dataset_column(ds, c->spec.cat_names[i]);
        if (!c->values || !c->values[i] || !col || !col->vocab)
            continue; /* an older checkpoint; a missing column is named elsewhere */
        if (col->vocab_size != c->spec.vocab[i])
            return rt_err(err, RT_ERR_INVALID,
                          "column %s: the dataset has %d values, the model %d: prepared from other "
                          "data", c->spec.cat_names[i], col->vocab_size, c->spec.vocab[i]);
        for (int k = 0; k < col->vocab_size; k++) {
            const char *a = c->values[i][k], *b = col->vocab[k];
            if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
                return rt_err(err, RT_ERR_INVALID,
                              "column %s: the dataset's value #%d is %s%s%s, the model's %s%s%s: "
                              "the dataset was prepared from other data and its categories "
                              "would index other embedding rows; prepare the new rows together "
                              "with the training data, or train again",
                              c->spec.cat_names[i], k, b ? "'" : "", b ? b : "NULL", b ? "'" : "",
                              a ? "'" : "", a ? a : "NULL", a ? "'" : "");
        }
    }
    return RT_OK;
}
