#!/usr/bin/env python3
"""scripts/check-layers.py on small trees: it passes a tree that keeps its layers and names the
file and line of each way to break them."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check-layers.py"

DOC = """# Architecture

```layers
util:
nn: util
models: nn
```

```levels
2  models
1  nn
0  util
```

| folder | what it holds |
|---|---|
| `util/` | `a` (the first) |
| `nn/` | `b.h` |
| `models/` | `c`, `registry` (`models/registry.cpp`, the families' list) |
| `models/cat/` | `model` |
"""

CMAKE = """xl_layer(util SOURCES
  a.cpp)
xl_layer(nn DEPS util SOURCES
  b.cpp)
xl_layer(models DEPS nn SOURCES
  c.cpp)
"""

FILES = {
    "src/util/a.cpp": '#include "xl/util/a.h"\n',
    "include/xl/util/a.h": "#pragma once\n",
    "src/nn/b.cpp": '#include "xl/nn/b.h"\n#include "xl/util/a.h"\n',
    "include/xl/nn/b.h": "#pragma once\n",
    "src/models/c.cpp": '#include "xl/nn/b.h"\n#include "xl/util/a.h"\n',
    # A family folder, seen by its own files and the registry only.
    "include/xl/models/cat/model.h": "#pragma once\n",
    "src/models/cat/model.cpp": '#include "xl/models/cat/model.h"\n'
                                'bool mine = model.type == "cat";\n',
    "src/models/registry.cpp": '#include "xl/models/cat/model.h"\n',
    # The apps, each run by an end-to-end test.
    "apps/CMakeLists.txt": "set(XL_APPS xl-one\n  xl-two)\n",
    "tests/e2e/xl_one_test.cpp": 'run(app("xl-one"));\n',
    "tests/e2e/both_test.cpp": 'run("build/bin/xl-two --run r");\n',
}


class CheckLayers(unittest.TestCase):
    def tree(self, doc=DOC, cmake=CMAKE, files=None):
        root = Path(self.enterContext(tempfile.TemporaryDirectory()))
        (root / "docs").mkdir()
        (root / "docs" / "architecture.md").write_text(doc)
        (root / "src").mkdir()
        (root / "src" / "CMakeLists.txt").write_text(cmake)
        for name, text in {**FILES, **(files or {})}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    def check(self, root):
        result = subprocess.run(
            [sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
        return result.returncode, result.stderr

    def test_a_tree_that_keeps_its_layers_passes(self):
        self.assertEqual(self.check(self.tree()), (0, ""))

    def test_an_include_from_above_names_the_file_and_line(self):
        code, err = self.check(self.tree(files={
            "src/nn/b.cpp": '#include "xl/nn/b.h"\n#include "xl/models/c.h"\n'}))
        self.assertEqual(code, 1)
        self.assertIn("src/nn/b.cpp:2: nn/ includes xl/models/, which is not below it "
                      "(it may use: util)", err)

    def test_an_include_from_a_header_counts_too(self):
        code, err = self.check(self.tree(files={
            "include/xl/util/a.h": '#pragma once\n#include "xl/nn/b.h"\n'}))
        self.assertEqual(code, 1)
        self.assertIn("include/xl/util/a.h:2: util/ includes xl/nn/", err)

    def test_cmake_deps_other_than_the_layers_fail(self):
        code, err = self.check(self.tree(cmake=CMAKE.replace("models DEPS nn", "models DEPS util")))
        self.assertEqual(code, 1)
        self.assertIn("xl_layer(models) DEPS util; the layers say nn", err)

    def test_a_folder_without_a_layer_fails(self):
        code, err = self.check(self.tree(files={"src/extra/d.cpp": ""}))
        self.assertEqual(code, 1)
        self.assertIn("the folder extra/ has no line in the layers", err)

    def test_levels_drawn_wrong_fail(self):
        code, err = self.check(self.tree(doc=DOC.replace("2  models\n1  nn", "1  models nn")))
        self.assertEqual(code, 1)
        self.assertIn("the levels drawn are not those of the layers", err)

    def test_a_use_of_a_later_line_fails(self):
        doc = DOC.replace("util:\nnn: util\n", "util: nn\nnn: util\n")
        code, err = self.check(self.tree(doc=doc))
        self.assertEqual(code, 1)
        self.assertIn("util uses nn, which is not on an earlier line", err)

    def test_a_family_folder_seen_from_outside_fails(self):
        code, err = self.check(self.tree(files={
            "src/models/c.cpp": '#include "xl/nn/b.h"\n#include "xl/models/cat/model.h"\n'}))
        self.assertEqual(code, 1)
        self.assertIn("src/models/c.cpp:2: includes the family folder models/cat/; only that "
                      "folder and src/models/registry.cpp see a family", err)

    def test_a_family_named_outside_its_folder_fails(self):
        code, err = self.check(self.tree(files={
            "src/nn/b.cpp": '#include "xl/nn/b.h"\nif (c.model.type != "cat") {}\n'}))
        self.assertEqual(code, 1)
        self.assertIn('src/nn/b.cpp:2: names a family (type != "cat") outside config/ and the '
                      "family folders", err)

    def test_a_family_through_the_front_door_fails(self):
        code, err = self.check(self.tree(files={
            "src/models/cat/model.cpp": '#include "xl/models/cat/model.h"\n'
                                        '#include "xl/models/kit.h"\n'
                                        '#include "xl/models/factory.h"\n'}))
        self.assertEqual(code, 1)
        self.assertIn("src/models/cat/model.cpp:3: the family folder models/cat/ includes the "
                      "front door xl/models/factory.h", err)
        self.assertNotIn("model.cpp:2", err)

    def test_a_source_its_row_does_not_name_fails(self):
        code, err = self.check(self.tree(files={"src/nn/e.cpp": "", "include/xl/nn/f.h": ""}))
        self.assertEqual(code, 1)
        self.assertIn("docs/architecture.md:18: the row of nn/ does not name `e` (nn/e.*)", err)
        self.assertIn("the row of nn/ does not name `f` (nn/f.*)", err)
        self.assertNotIn("`b`", err)

    def test_a_folder_without_a_row_fails(self):
        code, err = self.check(self.tree(files={"src/models/dog/model.cpp": ""}))
        self.assertEqual(code, 1)
        self.assertIn("the folder models/dog/ has no row in the table", err)

    def test_a_cuda_header_outside_the_cuda_files_fails(self):
        code, err = self.check(self.tree(files={
            "src/nn/b.cpp": '#include "xl/nn/b.h"\n#include <c10/cuda/CUDAFunctions.h>\n'}))
        self.assertEqual(code, 1)
        self.assertIn("src/nn/b.cpp:2: includes a CUDA header; outside src/runtime/cuda.cpp, src/runtime/cuda_graph_capture.cpp", err)

    def test_an_app_no_end_to_end_test_runs_fails(self):
        code, err = self.check(self.tree(files={"tests/e2e/both_test.cpp": 'run("xl-twofold");\n'}))
        self.assertEqual(code, 1)
        self.assertIn("apps/CMakeLists.txt: xl-two is run by no end-to-end test", err)
        self.assertNotIn("xl-one is run", err)

    def test_cli11_outside_the_apps_fails(self):
        code, err = self.check(self.tree(files={
            "include/xl/nn/b.h": "#pragma once\n#include <CLI/CLI.hpp>\n",
            "src/app/cli.cpp": "#include <CLI/CLI.hpp>\n"}))
        self.assertEqual(code, 1)
        self.assertIn("include/xl/nn/b.h:2: includes CLI11 outside app/ and apps/", err)
        self.assertNotIn("src/app/cli.cpp", err)

    def test_a_format_flag_named_by_the_prep_command_fails(self):
        code, err = self.check(self.tree(files={
            "src/prep/prep_formats.cpp": 'Described(\n  "--min-freq", {"word"}).needs("--out", "")\n',
            "apps/xl_prep.cpp": 'app.add_option("--out", out);\napp.add_option("--min-freq", f);\n'}))
        self.assertEqual(code, 1)
        self.assertIn("apps/xl_prep.cpp:2: names --min-freq, a flag of src/prep/prep_formats.cpp", err)
        self.assertNotIn("--out", err)

    def test_a_file_over_400_lines_fails(self):
        code, err = self.check(self.tree(files={"src/nn/b.cpp": '#include "xl/nn/b.h"\n' * 401}))
        self.assertEqual(code, 1)
        self.assertIn("src/nn/b.cpp: 401 lines, over the 400 a file may have", err)
        self.assertEqual(self.check(self.tree(files={"src/nn/b.cpp": '#include "xl/nn/b.h"\n' * 400})), (0, ""))


if __name__ == "__main__":
    unittest.main()
