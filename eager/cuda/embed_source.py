"""Writes a text file as a C++ string literal (for #include inside an
initializer): eager/cuda/PointwiseMath.cuh becomes the prelude the eager
CUDA kernels prepend to their NVRTC sources."""
import sys

src, out = sys.argv[1], sys.argv[2]
text = open(src).read()
delim = "EMBER_SRC"
if f"){delim}\"" in text:
    sys.exit(f"{src} contains the delimiter ){delim}\"")
# Raw string literals have an implementation limit on length in some
# compilers: emit pieces of at most 8 KiB, concatenated.
pieces = [text[i:i + 8192] for i in range(0, len(text), 8192)] or [""]
body = "\n".join(f'R"{delim}({p}){delim}"' for p in pieces) + "\n"
old = open(out).read() if __import__("os").path.exists(out) else None
if old != body:
    open(out, "w").write(body)
