"""Emit the wgmma m64nNk16 wrapper (fp32 accumulators, A and B K-major in shared memory) for each N given."""
import sys


def gen(n):
    r = n // 2
    reg_lines = []
    for i in range(0, r, 16):
        reg_lines.append('        "' + ", ".join(f"%{j}" for j in range(i, min(i + 16, r))) +
                         (', "' if i + 16 < r else '}, "'))
    out_lines = []
    for i in range(0, r, 8):
        out_lines.append("          " + ", ".join(f'"+f"(d[{j}])' for j in range(i, min(i + 8, r))))
    return (f"__device__ __forceinline__ void wgmma_m64n{n}(float (&d)[{r}], uint64_t desc_a, uint64_t desc_b)\n"
            "{\n    asm volatile(\n"
            f'        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r + 2}, 0;\\n"\n'
            f'        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {{"\n'
            + "\n".join(reg_lines) + "\n"
            f'        "%{r}, %{r + 1}, p, 1, 1, 0, 0;\\n}}\\n"\n'
            "        : " + ",\n".join(out_lines).lstrip() + "\n"
            '        : "l"(desc_a), "l"(desc_b), "r"(1));\n}\n')


for n in sys.argv[1:]:
    print(gen(int(n)))
