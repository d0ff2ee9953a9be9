"""Tests of the spec runner's own logic: verdicts, manifest errors, TLC lookup.

They need no TLC: they feed check.py the texts TLC prints (as recorded in
shared/TLC-NOTES.md) and broken manifests.  Run: python3 -m unittest discover -s specs/tools
"""

import contextlib
import io
import json
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import check

DONE = ("Model checking completed. No error has been found.\n"
        "1,234 states generated, 567 distinct states found, 0 states left on queue.\n"
        "The depth of the complete state graph search is 12.\n")


class Workspace:
    """A throw-away specs folder with a manifest and cfg files."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = Path(self.dir.name)
        (self.root / "P").mkdir()
        (self.root / "P" / "MCP.tla").write_text("---- MODULE MCP ----\n====\n")

    def cfg(self, name, text):
        path = self.root / "P" / f"{name}.cfg"
        path.write_text(text)
        return path

    def manifest(self, models):
        path = self.root / "models.json"
        path.write_text(json.dumps({"models": models}))
        return path


class JudgeTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace()
        self.addCleanup(self.ws.dir.cleanup)

    def test_pass(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\nINVARIANT Inv\n")
        self.assertEqual(check.judge(DONE, cfg)[0], "pass")

    def test_named_invariant(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\nINVARIANTS TypeOK Inv\n")
        outcome, violated, _ = check.judge("Error: Invariant Inv is violated.\n", cfg)
        self.assertEqual((outcome, violated), ("violates Inv", "Inv"))

    def test_action_property_by_location_needs_a_sole_property(self):
        log = "Error: Action property line 4, col 18 to line 4, col 42 of module B is violated.\n"
        sole = self.ws.cfg("A", "SPECIFICATION Spec\nPROPERTY AbsSpec\n")
        self.assertEqual(check.judge(log, sole)[0], "violates AbsSpec")
        two = self.ws.cfg("B", "SPECIFICATION Spec\nPROPERTIES AbsSpec OtherProp\n")
        self.assertEqual(check.judge(log, two)[0], "violates ?")

    def test_action_property_by_name(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\nPROPERTIES TwoPhaseProp AbsSpec\n")
        log = "Error: Action property TwoPhaseProp is violated.\n"
        self.assertEqual(check.judge(log, cfg)[0], "violates TwoPhaseProp")

    def test_temporal_violation_attributed_only_to_a_sole_property(self):
        log = "Error: Temporal properties were violated.\n"
        sole = self.ws.cfg("A", "SPECIFICATION Spec\n\\* a comment PROPERTY Nope\nPROPERTY LiveProp\n")
        self.assertEqual(check.judge(log, sole)[0], "violates LiveProp")
        two = self.ws.cfg("B", "SPECIFICATION Spec\nPROPERTY LiveProp\nPROPERTY OtherProp\n")
        self.assertEqual(check.judge(log, two)[0], "violates ?")

    def test_simulation_that_finished_passes(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\nINVARIANT Inv\n")
        log = "Computed 1 initial states...\nProgress: 12001 states checked.\nFinished in 02s at (2026-11-22 19:52:55)\n"
        self.assertEqual(check.judge(log, cfg, simulated=True)[0], "pass")
        self.assertEqual(check.judge(log, cfg)[0], "error")  # an exhaustive run must say "No error"
        violated = "Error: Invariant Inv is violated.\nFinished in 01s at (2026-11-22 19:52:55)\n"
        self.assertEqual(check.judge(violated, cfg, simulated=True)[0], "violates Inv")

    def test_deadlock(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\n")
        self.assertEqual(check.judge("Error: Deadlock reached.\n", cfg)[0], "violates Deadlock")

    def test_parse_error_is_neither_pass_nor_violation(self):
        cfg = self.ws.cfg("A", "SPECIFICATION Spec\n")
        outcome, _, detail = check.judge("***Parse Error***\nError: Parsing or semantic analysis failed.\n", cfg)
        self.assertEqual(outcome, "error")
        self.assertIn("Parse Error", detail)

    def test_counts(self):
        self.assertEqual(check.last_int(r"^([\d,]+) states generated", DONE), 1234)
        self.assertEqual(check.last_int(r"depth of the complete state graph search is (\d+)", DONE), 12)


class ManifestTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace()
        self.addCleanup(self.ws.dir.cleanup)
        self.ws.cfg("PModel", "SPECIFICATION Spec\n")
        self.good = {"name": "PModel", "spec": "P/MCP.tla", "cfg": "P/PModel.cfg", "expect": "pass",
                     "reaches": ["CommitReachable"]}
        patcher = mock.patch.object(check, "SPECS", self.ws.root)
        patcher.start()
        self.addCleanup(patcher.stop)

    def load_error(self, models):
        path = self.ws.manifest(models)
        with self.assertRaises(check.UsageError) as cm:
            check.load_manifest(path)
        self.assertIn(str(path), str(cm.exception))
        return str(cm.exception)

    def test_good_manifest_loads(self):
        models = check.load_manifest(self.ws.manifest([self.good]))
        self.assertEqual([m.name for m in models], ["PModel"])
        self.assertTrue(models[0].deadlock)

    def test_paths_are_relative_to_the_manifest(self):
        # a generated manifest (trace validation) lives elsewhere and may name files absolutely
        elsewhere = Workspace()
        self.addCleanup(elsewhere.dir.cleanup)
        elsewhere.cfg("PModel", "SPECIFICATION Spec\n")
        models = check.load_manifest(elsewhere.manifest([self.good]))
        self.assertEqual(models[0].spec, elsewhere.root / "P" / "MCP.tla")
        absolute = dict(self.good, spec=str(elsewhere.root / "P" / "MCP.tla"), cfg=str(elsewhere.root / "P" / "PModel.cfg"))
        self.assertEqual(check.load_manifest(self.ws.manifest([absolute]))[0].cfg, elsewhere.root / "P" / "PModel.cfg")

    def test_bad_expect(self):
        msg = self.load_error([dict(self.good, expect="fails")])
        self.assertIn('expect is "fails"', msg)

    def test_missing_cfg_file(self):
        msg = self.load_error([dict(self.good, cfg="P/Nope.cfg")])
        self.assertIn("Nope.cfg does not exist", msg)

    def test_missing_field(self):
        bad = dict(self.good)
        del bad["spec"]
        self.assertIn('"spec"', self.load_error([bad]))

    def test_observed_seconds_must_be_a_number(self):
        self.assertIn('"observed" "seconds" must be a number',
                      self.load_error([dict(self.good, observed={"seconds": "long"})]))

    def test_duplicate_name(self):
        self.assertIn("listed twice", self.load_error([self.good, self.good]))

    def test_invalid_json(self):
        path = self.ws.root / "models.json"
        path.write_text("{ not json")
        with self.assertRaises(check.UsageError) as cm:
            check.load_manifest(path)
        self.assertIn("not valid JSON", str(cm.exception))

    def test_pass_model_needs_reaches_or_a_vacuity_reason(self):
        bare = dict(self.good)
        del bare["reaches"]
        self.assertIn('lists no "reaches"', self.load_error([bare]))
        models = check.load_manifest(self.ws.manifest([dict(bare, vacuity="inductive: starts from every TypeOK state")]))
        self.assertEqual(models[0].reaches, ())

    def test_simulate_needs_traces_and_depth(self):
        msg = self.load_error([dict(self.good, simulate={"traces": 100})])
        self.assertIn('"simulate" must be', msg)
        models = check.load_manifest(self.ws.manifest([dict(self.good, simulate={"traces": 100, "depth": 50, "seed": 3})]))
        self.assertEqual(models[0].simulate, (100, 50, 3))
        self.assertEqual(check.with_reachability(models)[1].simulate, (100, 50, 3))

    def test_reaches_only_on_pass_models(self):
        msg = self.load_error([dict(self.good, expect="violates Inv")])
        self.assertIn('"reaches" belongs to models expected to pass', msg)

    def test_reachability_models_are_derived(self):
        models = check.with_reachability(check.load_manifest(self.ws.manifest([self.good])))
        self.assertEqual([(m.name, m.expect, m.deadlock, m.only_invariant) for m in models],
                         [("PModel", "pass", True, None),
                          ("PModel:CommitReachable", "violates CommitReachable", False, "CommitReachable")])

    def test_reachability_cfg_checks_the_invariant_alone(self):
        cfg = ("CONSTANTS\n    N = 2\nSPECIFICATION Spec\nINVARIANTS TypeOK\n    SafeInv\n"
               "PROPERTY LiveProp\nSYMMETRY Sym\n")
        derived = check.reachability_cfg(cfg, "CommitReachable")
        self.assertEqual(derived.split(), ["CONSTANTS", "N", "=", "2", "SPECIFICATION", "Spec", "SYMMETRY", "Sym",
                                           "INVARIANT", "CommitReachable"])

    def test_select_globs_skip_manual_models(self):
        big = dict(self.good, name="PModelLarge", manual=True)
        models = check.load_manifest(self.ws.manifest([self.good, big]))
        self.assertEqual([m.name for m in check.select(models, ["PModel*"], False)], ["PModel"])
        self.assertEqual([m.name for m in check.select(models, ["PModelLarge"], False)], ["PModelLarge"])
        self.assertEqual(len(check.select(models, [], True)), 2)
        with self.assertRaises(check.UsageError):
            check.select(models, ["Nothing*"], False)


class ShareTest(unittest.TestCase):
    """Processes given one --share folder split the models: each runs those it claims first."""

    def setUp(self):
        self.ws = Workspace()
        self.addCleanup(self.ws.dir.cleanup)
        for name in ("Short", "Long", "Middle"):
            self.ws.cfg(name, "SPECIFICATION Spec\n")
        entry = lambda name, seconds: {"name": name, "spec": "P/MCP.tla", "cfg": f"P/{name}.cfg", "expect": "pass",
                                        "reaches": [f"{name}Reachable"], "observed": {"seconds": seconds}}
        self.path = self.ws.manifest([entry("Short", 1.0), entry("Long", 90.0), entry("Middle", 10.0)])
        self.share = self.ws.root / "share"
        self.share.mkdir()

    def run_main(self, *extra):
        ran = []

        def run_model(model, *_):
            ran.append(model.name)
            return check.Result(model, model.expect)
        out = io.StringIO()
        with mock.patch.object(check, "run_model", run_model), \
                mock.patch.object(check, "find_tlc", return_value=Path("tla2tools.jar")), \
                mock.patch.object(check, "java_bin", return_value="java"), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = check.main(["--manifest", str(self.path), *extra])
        return code, ran, out.getvalue()

    def test_longest_first_keeps_a_reachability_model_beside_its_base(self):
        models = check.with_reachability(check.load_manifest(self.path))
        self.assertEqual([m.name for m in check.longest_first(models)],
                         ["Long", "Long:LongReachable", "Middle", "Middle:MiddleReachable",
                          "Short", "Short:ShortReachable"])

    def test_a_model_is_claimed_once(self):
        model = check.load_manifest(self.path)[0]
        self.assertTrue(check.claim(self.share, model))
        self.assertFalse(check.claim(self.share, model))

    def test_a_process_runs_only_what_no_other_claimed(self):
        for name in ("Long", "Middle~MiddleReachable"):
            (self.share / name).touch()
        code, ran, out = self.run_main("--share", str(self.share))
        self.assertEqual(code, 0)
        self.assertEqual(ran, ["Long:LongReachable", "Middle", "Short", "Short:ShortReachable"])
        self.assertIn("4 passed, 0 failed", out)
        # a second process finds every model claimed: it runs none, and that is no failure
        code, ran, out = self.run_main("--share", str(self.share))
        self.assertEqual((code, ran), (0, []))
        self.assertIn("0 passed, 0 failed", out)

    def test_alone_running_no_model_fails(self):
        with mock.patch.object(check, "with_reachability", return_value=[]):
            code, ran, _ = self.run_main()
        self.assertEqual((code, ran), (1, []))

    def test_share_must_be_a_folder(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = check.main(["--manifest", str(self.path), "--share", str(self.ws.root / "none")])
        self.assertEqual(code, 2)
        self.assertIn("not a directory", err.getvalue())


class FindTlcTest(unittest.TestCase):
    def test_env_jar_missing_is_an_error(self):
        with mock.patch.dict(os.environ, {"TLA2TOOLS_JAR": "/nonexistent/tla2tools.jar"}):
            with self.assertRaises(check.UsageError) as cm:
                check.find_tlc()
        self.assertIn("TLA2TOOLS_JAR", str(cm.exception))

    def test_no_jar_and_no_maven_says_so(self):
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(os.environ, {}, clear=False), \
                mock.patch.object(check, "CACHE", Path(d) / "cache"), \
                mock.patch.object(check.shutil, "which", return_value=None):
            os.environ.pop("TLA2TOOLS_JAR", None)
            with self.assertRaises(check.UsageError) as cm:
                check.find_tlc()
        self.assertIn("no TLC available", str(cm.exception))

    def test_main_exits_2_without_tlc(self):
        err = io.StringIO()
        with mock.patch.dict(os.environ, {"TLA2TOOLS_JAR": "/nonexistent/tla2tools.jar"}), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = check.main(["MCSLock"])
        self.assertEqual(code, 2)
        self.assertIn("no such file", err.getvalue())


if __name__ == "__main__":
    unittest.main()
