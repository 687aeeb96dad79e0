// gloo_allreduce.cc — baseline for bench/allreduce: Gloo's allreduce (ring,
// PyTorch's CPU default) over Gloo's TCP transport on 127.0.0.1, float32
// sum, median microseconds per iteration.  Not part of the build; compiled by
// bench/run_transport.sh when Debian's libgloo-dev is installed.
//
//   gloo_allreduce --rank R --size N --store DIR --bytes B [--iters K]
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    int rank = -1, size = 0, iters = 0;
    size_t bytes = 0;
    std::string store;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rank")) rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--store")) store = argv[i + 1];
        else if (!strcmp(argv[i], "--bytes")) bytes = strtoull(argv[i + 1], nullptr, 0);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    }
    if (rank < 0 || size < 1 || store.empty() || bytes < 4) {
        fprintf(stderr, "usage: gloo_allreduce --rank R --size N --store DIR --bytes B [--iters K]\n");
        return 2;
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore fs(store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(std::chrono::seconds(300));
    ctx->connectFullMesh(fs, dev);
    size_t count = bytes / 4;
    std::vector<float> buf(count, 1.0f);
    if (iters <= 0) {
        double est = 20.0 + bytes / 1000.0;
        iters = std::max(5, std::min(2000, (int)(1e6 / est)));
    }
    auto run = [&] {
        gloo::AllreduceOptions o(ctx);
        o.setOutput(buf.data(), count);
        o.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(
            &gloo::sum<float>));
        gloo::allreduce(o);
    };
    for (int i = 0; i < 3; i++)
        run();
    std::vector<double> t(iters);
    for (int i = 0; i < iters; i++) {
        auto a = std::chrono::steady_clock::now();
        run();
        t[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
    }
    std::sort(t.begin(), t.end());
    printf("rank=%d usec=%.2f\n", rank, t[iters / 2]);
    return 0;
}
