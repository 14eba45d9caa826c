# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_oracle_apart.py: the engine's test oracles (tests/oracle, issue 27) stay out of
the shipped package (scripts/cudapool_analysis) and out of the install. No module of the package
imports the oracle (its imports walked with ast, lazy ones inside functions included: an absolute
import of `oracle`, a relative one of a module the package does not have); importing every module
of the package with only scripts/ on the path imports no oracle module; no oracle module is in the
package again (by name, or by the sentence every oracle module opens with); and the install rules
(CMakeLists.txt files outside tests/) name no oracle and install the package's folder as it is.
Not here: the installed files themselves (tests/cli/install_package.sh lists them, and the .deb's),
what the oracles compute (the agreement tests: tests/cli/analyze_agree.sh, ...).
"""

import ast
import os
import re
import subprocess
import sys

from conftest import SOURCE

PACKAGE = os.path.join(SOURCE, "scripts", "cudapool_analysis")
ORACLE = os.path.join(SOURCE, "tests", "oracle")
ORACLE_MARK = "A test oracle of the analysis engine"   # in every oracle module's docstring


def modules(folder):
    """The names of the Python modules in folder (not its subfolders)."""
    return {f[:-3] for f in os.listdir(folder) if f.endswith(".py")}


def python_files(folder):
    for here, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(here, f)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def oracle_imports(source, shipped):
    """The imports in a module of the package (source) that reach outside it toward the oracle:
    `import oracle...`, `from oracle... import`, a relative import of a module the package does
    not have (shipped: its module names), or a module name "oracle..." given as a string (an
    importlib call)."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Import):
            found += [a.name for a in n.names if a.name.split(".")[0] == "oracle"]
        elif isinstance(n, ast.ImportFrom):
            if n.level == 0:
                if (n.module or "").split(".")[0] == "oracle":
                    found.append(n.module)
            elif n.module is not None:
                if n.module.split(".")[0] not in shipped:
                    found.append("." + n.module)
            else:
                found += ["." + a.name for a in n.names if a.name not in shipped]
        elif (isinstance(n, ast.Constant) and type(n.value) is str
              and re.fullmatch(r"oracle(\.\w+)*", n.value)):
            found.append(repr(n.value))
    return found


def test_no_module_of_the_package_imports_the_oracle():
    shipped = modules(PACKAGE)
    bad = {}
    for path in python_files(PACKAGE):
        found = oracle_imports(read(path), shipped)
        if found:
            bad[os.path.relpath(path, SOURCE)] = found
    assert not bad, "shipped modules that import a test oracle (tests/oracle): %s" % bad


def test_the_scan_finds_an_import_of_the_oracle():
    shipped = {"reader", "text"}
    source = ("from .reader import LogError\nfrom . import text\n"
              "def f():\n    from .report import read_log\n    from . import layout\n"
              "    import oracle.report\n    from oracle import pagedata\n"
              "    return importlib.import_module('oracle.accounting')\n")
    assert oracle_imports(source, shipped) == [
        ".report", ".layout", "oracle.report", "oracle", "'oracle.accounting'"]


def test_importing_the_package_imports_no_oracle():
    code = ("import importlib, pkgutil, sys, cudapool_analysis as p\n"
            "for m in pkgutil.iter_modules(p.__path__):\n"
            "    if m.name != '__main__':\n"
            "        importlib.import_module('cudapool_analysis.' + m.name)\n"
            "print(' '.join(sorted(k for k in sys.modules if k.split('.')[0] == 'oracle')))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "scripts"), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=SOURCE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", "oracle modules imported: " + done.stdout


def test_no_oracle_module_is_in_the_package():
    oracle = modules(ORACLE) - {"__init__"}
    assert oracle, "no oracle modules found in %s" % ORACLE
    for name in sorted(oracle):
        assert ORACLE_MARK in read(os.path.join(ORACLE, name + ".py")), (
            "tests/oracle/%s.py does not say it is a test oracle (%r)" % (name, ORACLE_MARK))
    again = sorted(oracle & modules(PACKAGE))
    assert not again, "oracle modules in the shipped package: %s" % again
    marked = sorted(os.path.relpath(p, SOURCE) for p in python_files(PACKAGE)
                    if ORACLE_MARK in read(p))
    assert not marked, "shipped modules that say they are a test oracle: %s" % marked


def install_rules(source):
    """The install(...) calls of a CMake file, each as one string (parentheses balanced)."""
    rules = []
    for m in re.finditer(r"\binstall\s*\(", source):
        depth, i = 1, m.end()
        while depth and i < len(source):
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        rules.append(source[m.start():i])
    return rules


def test_the_install_rules_ship_no_oracle():
    rules = []
    for here, dirs, files in os.walk(SOURCE):
        rel = os.path.relpath(here, SOURCE)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "node_modules")
                   and not (rel == "." and (d == "tests" or d.startswith("build")))]
        if "CMakeLists.txt" in files:
            rules += install_rules(read(os.path.join(here, "CMakeLists.txt")))
    assert rules, "no install() rules found"
    bad = [r for r in rules if re.search(r"oracle|\btests\b", r)]
    assert not bad, "install rules that name the test oracles or tests/: %s" % bad
    # The package is installed as its folder (so what is installed is what the checks above saw).
    assert any(re.search(r"DIRECTORY\s+\S*/cudapool_analysis\s", r) for r in rules), rules
