# cu2cpp.cmake — rewrite a CUDA source (.cu or .cuh) into C++ for cudaemu:
#   kernel<<<grid, block, shared, stream>>>(args)  ->  CUDAEMU_LAUNCH(kernel)(grid, block, shared, stream)(args)
#   extern __shared__ T name[];                     ->  T *name = CUDAEMU_DYNAMIC_SHARED(T);
# Lines stay where they were (#line points at the original), so compiler
# messages, sanitizer reports and cudaemu's own diagnostics name the .cu.
# Usage: cmake -DIN=src.cu -DOUT=gen.cpp -P cu2cpp.cmake
file(READ "${IN}" src)
string(REGEX REPLACE
  "extern[ \t]+__shared__[ \t]+(__align__\\([0-9]+\\)[ \t]+)?([A-Za-z_][A-Za-z0-9_:]*([ \t]+[A-Za-z_][A-Za-z0-9_:]*)*)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\\[[ \t]*\\][ \t]*;"
  "\\2 *\\4 = CUDAEMU_DYNAMIC_SHARED(\\2);" src "${src}")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_:]*(<[^<>;()]*>)?)[ \t]*<<<" "CUDAEMU_LAUNCH(\\1)(" src "${src}")
string(REPLACE ">>>" ")" src "${src}")
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${src}")
file(RENAME "${OUT}.tmp" "${OUT}")
