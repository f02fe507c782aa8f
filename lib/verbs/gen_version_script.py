#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the linker version script of a drop-in library (libibverbs.so.1, librdmacm.so.1)
from its reference export list (libibverbs.exports, librdmacm.exports: one line per
version node, `name@@NODE` for a default version, `name@NODE` for a compat version).

Every name goes into its node's `global:` list; compat versions are bound in C with
__attribute__((symver("name@NODE"))) (ld keeps such a symbol only when its node lists
the name, else `local: *` hides it). Numbered nodes of one prefix (IBVERBS_1.x,
RDMACM_1.x) chain (each inherits the previous); the others (IBVERBS_PRIVATE_*) stand
alone, as rdma-core's.

usage: gen_version_script.py EXPORTS OUTPUT
"""
import os
import re
import sys


NUMBERED = re.compile(r'([A-Z]+)_(\d+)\.(\d+)')


def node_key(node):
    m = NUMBERED.fullmatch(node)
    return (0, m.group(1), int(m.group(2)), int(m.group(3))) if m else (1, node, 0, 0)


def main():
    src, out = sys.argv[1], sys.argv[2]
    nodes, default = [], {}  # node -> the names it lists
    for line in open(src, encoding='ascii'):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if '@' not in line:
            nodes.append(line)
            continue
        name, _, node = line.partition('@')
        node = node.lstrip('@')
        if not node:
            sys.exit(f'{src}: bad line {line!r}')
        default.setdefault(node, []).append(name)
    for node in list(default):
        if node not in nodes:
            sys.exit(f'{src}: node {node} used but not declared')
    name = os.path.basename(src)
    lines = [f'/* Generated from {name} by gen_version_script.py: do not edit. */']
    prev = None
    first = True
    for node in sorted(nodes, key=node_key):
        lines.append(f'{node} {{')
        names = sorted(set(default.get(node, [])))
        if names:
            lines.append('\tglobal:')
            lines += [f'\t\t{n};' for n in names]
        if first:
            lines.append('\tlocal: *;')
            first = False
        chained = NUMBERED.fullmatch(node) is not None
        lines.append('}' + (f' {prev};' if chained and prev else ';'))
        if chained:
            prev = node
    with open(out, 'w', encoding='ascii') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
