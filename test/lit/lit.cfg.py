# lit configuration of ember's FileCheck tests (test/lit/CMakeLists.txt
# writes lit.site.cfg.py, which loads this file).
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "ember"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.ember_obj_root
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]

# FileCheck, not, count from LLVM; ember-opt from the build tree.
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(
    ["ember-opt", "ember-capture", "ember-translate"],
    [config.ember_tools_dir, config.llvm_tools_dir])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# %ember_gen: the build tree's generated files (ir/EmberOpExamples.mlir).
config.substitutions.append(("%ember_gen", config.ember_gen_dir))

# "x86": the host is x86, where CPU kernels use x86's streaming stores
# (Note [Streaming stores]).
import platform

if platform.machine() in ("x86_64", "AMD64", "i686"):
    config.available_features.add("x86")

# "nvrtc": NVRTC loads here (the CUDA toolkit; no GPU needed), so the
# rendered CUDA kernels can be compiled (test/lit/codegen/cuda-nvrtc.test).
import subprocess

try:
    _out = subprocess.run(
        [os.path.join(config.ember_tools_dir, "ember-translate"),
         "--nvrtc-available"],
        capture_output=True, text=True, timeout=120).stdout
    if "nvrtc: yes" in _out:
        config.available_features.add("nvrtc")
except (OSError, subprocess.SubprocessError):
    pass
