#!/usr/bin/env python3
"""Reads SwiftPM's build description (debug.yaml or release.yaml) and prints what scripts/fuzz needs to compile a fuzz
target against one module of that build:

    fuzz-link-plan.py BUILD_YAML MODULE flags     # the module search flags SwiftPM gave MODULE, one a line
    fuzz-link-plan.py BUILD_YAML MODULE objects   # the object files of MODULE and of everything it depends on

Both come from llbuild's own graph, so a file or a dependency that is added, moved or removed needs no
change here (and no stale object of a removed file is linked).
"""
import json
import re
import sys


def read_commands(path):
    """The commands of an llbuild manifest: name -> {inputs, outputs, args}."""
    commands = {}
    section = None
    current = None
    with open(path, encoding="utf-8") as manifest:
        for line in manifest:
            if not line.strip():
                continue
            if not line.startswith(" "):
                section = line.strip().rstrip(":")
                current = None
                continue
            if section != "commands":
                continue
            head = re.match(r'^  "(.*)":\s*$', line)
            if head:
                current = commands.setdefault(head.group(1), {"inputs": [], "outputs": [], "args": []})
                continue
            field = re.match(r"^    (inputs|outputs|args): (\[.*\])\s*$", line)
            if field and current is not None:
                current[field.group(1)] = json.loads(field.group(2))
    return commands


def main():
    path, module, what = sys.argv[1:4]
    commands = read_commands(path)
    producer = {}
    for name, command in commands.items():
        for output in command["outputs"]:
            producer[output] = name

    configuration = "release" if path.endswith("release.yaml") else "debug"
    compile_names = [n for n in commands if n.startswith("C." + module + "-") and n.endswith("-" + configuration + ".module")]
    if len(compile_names) != 1:
        sys.exit(f"fuzz-link-plan: no single compile command for module {module} in {path}")
    compile_command = commands[compile_names[0]]

    if what == "flags":
        # Swift search paths (-I DIR, -IDIR) and clang's (-Xcc -I -Xcc DIR, -Xcc -fmodule-map-file=…); code
        # generation flags are left out.
        args = compile_command["args"]
        flags = []
        index = 0
        while index < len(args):
            arg = args[index]
            following = args[index + 1] if index + 1 < len(args) else None
            if arg == "-I" and following is not None:
                flags += [arg, following]
                index += 2
            elif arg.startswith("-I"):
                flags.append(arg)
                index += 1
            elif arg == "-Xcc" and following == "-I" and index + 3 < len(args) and args[index + 2] == "-Xcc":
                flags += args[index:index + 4]
                index += 4
            elif arg == "-Xcc" and following is not None and following.startswith(("-I", "-fmodule-map-file=")):
                flags += [arg, following]
                index += 2
            else:
                index += 1
        print("\n".join(flags))
        return

    if what == "objects":
        objects = []
        seen = set()
        stack = [compile_names[0]]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            command = commands.get(name, {"inputs": [], "outputs": []})
            objects += [o for o in command["outputs"] if o.endswith(".o") and "/Modules/" not in o]
            for node in command["inputs"]:
                if node in producer:
                    stack.append(producer[node])
        print("\n".join(sorted(set(objects))))
        return

    sys.exit(f"fuzz-link-plan: unknown request {what}")


if __name__ == "__main__":
    main()
