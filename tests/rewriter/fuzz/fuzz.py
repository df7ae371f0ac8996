#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fuzzes spmd-migrate with mutated legacy sources.

Each mutant is one seed (tests/rewriter/fuzz/seeds/*.cc, or any legacy program given with --seed)
with one mutation: a token deleted or duplicated, two arguments of a call swapped, or a macro
inserted (a call or argument wrapped in a function-like macro, a token replaced by an object-like
macro). For each mutant the driver checks that spmd-migrate
  - neither crashes (a signal) nor hangs (--timeout);
  - never modifies a file that does not compile (clang++ -fsyntax-only), and exits 2 for it;
  - writes only code that compiles;
  - is idempotent: a second -i run on its output leaves every byte as it is;
and, for a sample of the mutants it changed that compile (--behaviour, default 50), that the
migrated program prints exactly what the legacy program prints on 8 CPU devices.

Usage:
  fuzz.py --tool build/rewriter/spmd-migrate --root . --build build --count 1000 --jobs 2
It prints a table of counts and exits 1 when any check failed; failing mutants are kept in
--work (default: a temporary folder, printed).
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOKEN = re.compile(
    r'R"([^(]*)\((?:.|\n)*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r"|//[^\n]*|/\*(?:.|\n)*?\*/"
    r"|[A-Za-z_][A-Za-z0-9_]*|\d[\w.']*|::|->|\.\.\.|&&|\|\||<<|>>|[-+*/%^&|!=<>]=|\+\+|--|\S")


def tokens(text):
    """(start, end) of every token that is not a comment or in a preprocessor line."""
    out = []
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith("//") or tok.startswith("/*"):
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue
        out.append((m.start(), m.end()))
    return out


def pick_token(rng, text, toks):
    """A token, three times as likely on a line that mentions pmap."""
    weights = []
    for start, _ in toks:
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start)
        weights.append(3 if "pmap" in text[line_start:line_end] else 1)
    return rng.choices(toks, weights=weights)[0]


def calls(text):
    """Every call `name(args)`: (open paren, close paren, [(arg start, arg end)])."""
    out = []
    for m in re.finditer(r"[A-Za-z_]\w*\s*\(", text):
        open_at = m.end() - 1
        depth, start, args, i = 0, open_at + 1, [], open_at
        while i < len(text):
            c = text[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    args.append((start, i))
                    break
            elif c == "," and depth == 1:
                args.append((start, i))
                start = i + 1
            elif c == '"':
                i = text.find('"', i + 1)
                while i > 0 and text[i - 1] == "\\":
                    i = text.find('"', i + 1)
                if i < 0:
                    break
            i += 1
        else:
            continue
        if len(args) >= 1 and text[args[0][0]:args[0][1]].strip():
            out.append((open_at, i, args))
    return out


def insert_after_includes(text, line):
    last = 0
    for m in re.finditer(r"^#include[^\n]*\n", text, re.M):
        last = m.end()
    return text[:last] + line + "\n" + text[last:]


def mutate(rng, text):
    """One mutation of `text`: (kind, mutant)."""
    toks = tokens(text)
    kind = rng.choice(["delete", "duplicate", "swap", "wrap_macro", "token_macro"])
    if kind == "delete":
        start, end = pick_token(rng, text, toks)
        return kind, text[:start] + text[end:]
    if kind == "duplicate":
        start, end = pick_token(rng, text, toks)
        return kind, text[:end] + " " + text[start:end] + text[end:]
    pmap_calls = [c for c in calls(text) if "pmap" in text[max(0, c[0] - 12):c[0]]]
    any_calls = [c for c in calls(text) if len(c[2]) >= 2]
    if kind == "swap":
        pool = [c for c in pmap_calls if len(c[2]) >= 2] or any_calls
        _, _, args = rng.choice(pool)
        a, b = sorted(rng.sample(range(len(args)), 2))
        (s1, e1), (s2, e2) = args[a], args[b]
        return kind, (text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:])
    if kind == "wrap_macro":
        pool = pmap_calls or any_calls
        open_at, close_at, args = rng.choice(pool)
        if rng.random() < 0.5:  # the whole call, with its qualified name
            start = open_at
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_:"):
                start -= 1
            end = close_at + 1
        else:  # one argument
            start, end = rng.choice(args)
        mutant = text[:start] + "FUZZ_WRAP(" + text[start:end] + ")" + text[end:]
        return kind, insert_after_includes(mutant, "#define FUZZ_WRAP(...) __VA_ARGS__")
    start, end = pick_token(rng, text, toks)
    mutant = text[:start] + "FUZZ_TOKEN" + text[end:]
    return kind, insert_after_includes(mutant, "#define FUZZ_TOKEN " + text[start:end])


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.root = os.path.abspath(args.root)
        self.include = [f"-I{self.root}/runtime/include", f"-I{self.root}/tests/rewriter/corpus"]
        self.flags = ["-std=c++20"] + self.include

    def run(self, cmd, timeout=None, env=None):
        """(exit status or "timeout", stdout, stderr, seconds)."""
        start = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               timeout=timeout or self.args.timeout, env=env)
            return p.returncode, p.stdout, p.stderr, time.monotonic() - start
        except subprocess.TimeoutExpired:
            return "timeout", "", "", time.monotonic() - start

    def prepare(self, seeds, texts):
        """Precompiles each seed's include lines (the text up to its last #include), which no
        mutation touches, so that a compile check parses the spmd headers once per seed, not
        twice per mutant. Returns {seed text: (prefix, pch path)}."""
        self.pch = {}
        if self.args.no_pch:
            return
        for seed, text in zip(seeds, texts):
            last = [m.end() for m in re.finditer(r"^#include[^\n]*\n", text, re.M)]
            if not last:
                continue
            prefix = text[:last[-1]]
            header = os.path.join(self.args.work, os.path.basename(seed) + ".prefix.h")
            with open(header, "w") as f:
                f.write(prefix)
            pch = header + ".pch"
            rc, _, log, _ = self.run([self.args.clang, "-x", "c++-header", "-w"] + self.flags +
                                     [header, "-o", pch], timeout=900)
            if rc != 0:
                sys.exit(f"fuzz.py: the include lines of {seed} do not compile:\n{log}")
            self.pch[text] = (prefix, pch)

    def compiles(self, path, seed_text):
        """Whether `path` compiles (clang++ -fsyntax-only). When it starts with the seed's include
        lines, the rest is compiled after their precompiled header: the same translation unit."""
        with open(path) as f:
            text = f.read()
        prefix, pch = self.pch.get(seed_text, (None, None))
        if prefix is not None and text.startswith(prefix):
            rest = path + ".rest.cc"
            with open(rest, "w") as f:
                f.write(text[len(prefix):])
            rc, _, _, _ = self.run([self.args.clang, "-fsyntax-only", "-w", "-include-pch", pch] +
                                   self.flags + [rest])
            os.remove(rest)
            return rc == 0
        rc, _, _, _ = self.run([self.args.clang, "-fsyntax-only", "-w"] + self.flags + [path])
        return rc == 0

    def tool(self, mode, path):
        return self.run([self.args.tool, mode, "--allow-remaining", "--quiet", path, "--"] +
                        self.flags)

    def one(self, index, seed_path, seed_text):
        """Runs one mutant; returns its record."""
        rng = random.Random(f"{self.args.random_seed}:{index}")
        kind, text = mutate(rng, seed_text)
        folder = os.path.join(self.args.work, f"m{index:05d}")
        os.makedirs(folder, exist_ok=True)
        shutil.copy(os.path.join(self.root, ".clang-format"), folder)
        path = os.path.join(folder, "mutant.cc")
        with open(path, "w") as f:
            f.write(text)
        record = {"index": index, "seed": os.path.basename(seed_path), "kind": kind}
        record["compiles"] = self.compiles(path, seed_text)
        rc, _, out, seconds = self.tool("-i", path)
        record["tool"], record["seconds"] = rc, round(seconds, 2)
        with open(path) as f:
            after = f.read()
        record["changed"] = after != text
        problems = []
        if rc == "timeout":
            problems.append("hang")
        elif rc < 0 or rc > 2:
            problems.append(f"crash ({rc})")
        if not record["compiles"]:
            if record["changed"]:
                problems.append("modified a file that does not compile")
            if rc != 2 and rc != "timeout":
                problems.append(f"exit {rc} on a file that does not compile")
        elif rc == 2:  # the tool's own parse must agree (and it wrote nothing it could fail on)
            problems.append("exit 2 on a file that compiles")
        elif record["changed"]:
            if not self.compiles(path, seed_text):
                problems.append("wrote code that does not compile")
            # A second -i run must leave the bytes as they are (not only say so with --diff).
            again, _, _, _ = self.tool("-i", path)
            with open(path) as f:
                if again == "timeout" or again > 1 or f.read() != after:
                    problems.append("not idempotent")
        record["problems"] = problems
        if problems:
            with open(os.path.join(folder, "tool.txt"), "w") as f:
                f.write(out)
        return record, (path, text) if record["compiles"] and record["changed"] and not problems \
            else None

    def behaviour(self, mutant_path, legacy_text):
        """Builds and runs the legacy and the migrated mutant: None when they print the same,
        "skip" when the legacy program does not build (a mutant need not link), else why not."""
        folder = os.path.dirname(mutant_path)
        legacy_path = os.path.join(folder, "legacy.cc")
        with open(legacy_path, "w") as f:
            f.write(legacy_text)
        build = os.path.abspath(self.args.build)
        libs = [f"{build}/runtime/libspmd_pmap_legacy.a",
                f"{build}/runtime/libspmd_pmap_legacy_impl.a", f"{build}/runtime/libspmd_runtime.a",
                *(self.args.lib or []), "-lfmt", "-pthread"]
        outputs = []
        for name, source in (("legacy", legacy_path), ("migrated", mutant_path)):
            binary = os.path.join(folder, name)
            rc, _, log, _ = self.run([self.args.cxx, "-O0", "-w"] + self.flags +
                                     [source, "-o", binary] + libs, timeout=900)
            if rc != 0:
                return "skip" if name == "legacy" else f"migrated build failed: {log[-2000:]}"
            env = dict(os.environ, SPMD_CPU_DEVICES="8")
            rc, out, err, _ = self.run([binary], timeout=self.args.timeout, env=env)
            outputs.append((rc, out))
        if outputs[0] != outputs[1]:
            with open(os.path.join(folder, "outputs.txt"), "w") as f:
                f.write(f"legacy {outputs[0][0]}:\n{outputs[0][1]}\nmigrated {outputs[1][0]}:\n"
                        f"{outputs[1][1]}")
            return "different output"
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--root", default=".")
    parser.add_argument("--build", default="build", help="build folder with the runtime libraries")
    parser.add_argument("--lib", action="append",
                        help="a library the static runtime needs (BLIS), for the behaviour builds")
    parser.add_argument("--seed", action="append", help="a legacy program (default: fuzz/seeds)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--behaviour", type=int, default=50,
                        help="mutants run side by side with their legacy build")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per tool run")
    parser.add_argument("--random-seed", default="spmd")
    parser.add_argument("--work", default=None)
    parser.add_argument("--clang", default="clang++-14")
    parser.add_argument("--cxx", default="g++")
    parser.add_argument("--json", default=None, help="write every record here")
    parser.add_argument("--no-pch", action="store_true",
                        help="compile checks parse every mutant whole (slower, the same verdicts)")
    args = parser.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="spmd-fuzz-")
    os.makedirs(args.work, exist_ok=True)
    seeds = args.seed or sorted(
        os.path.join(args.root, "tests/rewriter/fuzz/seeds", f)
        for f in os.listdir(os.path.join(args.root, "tests/rewriter/fuzz/seeds")))
    texts = [open(s).read() for s in seeds]
    fuzzer = Fuzzer(args)
    fuzzer.prepare(seeds, texts)
    records, candidates = [], []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(fuzzer.one, i, seeds[i % len(seeds)], texts[i % len(seeds)])
                   for i in range(args.count)]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            record, candidate = future.result()
            records.append(record)
            with open(os.path.join(args.work, "records.jsonl"), "a") as f:  # progress, as it goes
                f.write(json.dumps(record) + "\n")
            if candidate:
                candidates.append(candidate)
            if record["problems"]:
                print(f"mutant {record['index']} ({record['seed']}, {record['kind']}): "
                      f"{', '.join(record['problems'])}", flush=True)
            if done % 50 == 0:
                print(f"[{done}/{args.count}]", flush=True)
    # The behaviour sample: mutants the tool changed that compile, until enough of them build.
    rng = random.Random(args.random_seed)
    rng.shuffle(candidates)
    sample, mismatches, skipped = [], [], 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        while len(sample) < args.behaviour and candidates:
            batch = [candidates.pop() for _ in range(min(args.jobs, len(candidates)))]
            futures = {pool.submit(fuzzer.behaviour, path, text): path for path, text in batch}
            for future in concurrent.futures.as_completed(futures):
                problem = future.result()
                if problem == "skip":
                    skipped += 1
                    continue
                sample.append(futures[future])
                if problem:
                    mismatches.append((futures[future], problem))
                    print(f"behaviour: {futures[future]}: {problem[:300]}", flush=True)
    count = lambda f: sum(1 for r in records if f(r))
    table = [
        ("mutants", len(records)),
        ("compile", count(lambda r: r["compiles"])),
        ("do not compile", count(lambda r: not r["compiles"])),
        ("changed by the tool (compiling)", count(lambda r: r["compiles"] and r["changed"])),
        ("tool exit 0 / 1 / 2",
         "/".join(str(count(lambda r, c=c: r["tool"] == c)) for c in (0, 1, 2))),
        ("crashes", count(lambda r: any(p.startswith("crash") for p in r["problems"]))),
        ("hangs", count(lambda r: "hang" in r["problems"])),
        ("modified files that do not compile",
         count(lambda r: "modified a file that does not compile" in r["problems"])),
        ("wrong exit on files that do not compile",
         count(lambda r: any(p.endswith("does not compile") and p.startswith("exit")
                             for p in r["problems"]))),
        ("exit 2 on files that compile",
         count(lambda r: "exit 2 on a file that compiles" in r["problems"])),
        ("migrated code that does not compile",
         count(lambda r: "wrote code that does not compile" in r["problems"])),
        ("idempotence failures", count(lambda r: "not idempotent" in r["problems"])),
        ("behaviour sample (built and run both ways)", len(sample)),
        ("behaviour candidates whose legacy build fails (skipped)", skipped),
        ("behaviour mismatches", len(mismatches)),
        ("slowest tool run (s)", max((r["seconds"] for r in records), default=0)),
    ]
    print(f"\nspmd-migrate fuzz: {len(seeds)} seeds, random seed '{args.random_seed}', "
          f"work {args.work}")
    print("| check | count |\n|---|---|")
    for name, value in table:
        print(f"| {name} | {value} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"records": records, "mismatches": mismatches}, f, indent=1)
    if len(sample) < args.behaviour:
        print(f"behaviour: only {len(sample)} of the {args.behaviour} mutants asked for were built "
              "and run both ways (too few mutants changed by the tool that compile)")
    failed = any(r["problems"] for r in records) or mismatches or len(sample) < args.behaviour
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
