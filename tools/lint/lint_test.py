#!/usr/bin/env python3
"""Tests of tools/lint: that each check finds what it is for."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_size  # noqa: E402
import layers  # noqa: E402


def body(lines):
    return "\n".join(f"  x += {i};" for i in range(lines))


class CodeSizeTest(unittest.TestCase):
    def test_counts_a_function_from_its_brace_to_its_closing_brace(self):
        text = ("namespace petrel {\nint Foo::Bar(int x) {\n" + body(7) +
                "\n  return x;\n}\n}  // namespace petrel\n")
        (found,) = code_size.functions("a.cc", text)
        self.assertEqual(found[2], "Foo::Bar")
        self.assertEqual(found[0], 10)

    def test_braces_in_comments_strings_and_lambdas_do_not_split_it(self):
        text = ('void F() {\n  // }\n  auto s = "}";\n  auto f = [] { return 1; };\n'
                "  /* { */\n}\n")
        (found,) = code_size.functions("a.cc", text)
        self.assertEqual((found[0], found[2]), (6, "F"))

    def test_class_bodies_and_control_blocks_are_not_functions(self):
        text = ("struct S {\n  int f() const {\n    if (x) {\n      return 1;\n"
                "    }\n    return 0;\n  }\n};\n")
        names = [f[2] for f in code_size.functions("a.h", text)]
        self.assertEqual(names, ["f"])

    def test_the_tree_keeps_its_baseline(self):
        root = os.path.join(os.path.dirname(__file__), "..", "..")
        try:
            code = code_size.main([root])
        except SystemExit as e:
            self.skipTest(f"not a git checkout (exit {e.code})")
        self.assertEqual(code, 0)


class LayersTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return root

    def test_a_link_to_a_higher_floor_is_reported(self):
        root = self.tree({
            "van/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_van SRCS a.cc DEPS petrel_kv)\n",
            "kv/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_kv SRCS b.cc PUBLIC_DEPS petrel_van)\n",
        })
        self.assertEqual(layers.main([root]), 1)

    def test_a_link_beside_to_another_role_is_reported(self):
        root = self.tree({
            "server/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_tables SRCS a.cc DEPS petrel_trainer)\n",
            "worker/train/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_trainer SRCS b.cc)\n",
        })
        self.assertEqual(layers.main([root]), 1)

    def test_links_down_are_fine(self):
        root = self.tree({
            "kv/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_kv SRCS b.cc PUBLIC_DEPS petrel_van)\n"
                "# petrel_cc_library(NAME petrel_x DEPS petrel_tables)\n",
            "van/CMakeLists.txt": "petrel_cc_library(NAME petrel_van SRCS a.cc)\n",
            "server/CMakeLists.txt":
                "petrel_cc_library(NAME petrel_tables SRCS c.cc DEPS petrel_kv)\n",
        })
        self.assertEqual(layers.main([root]), 0)


if __name__ == "__main__":
    unittest.main()
