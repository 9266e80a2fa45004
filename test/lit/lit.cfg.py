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
