#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every public entry point libibverbs exports has a row in doc/verbs.md's "Every entry
point" table: each ibv_* and *_ibv_rate name of EXPORTS (lib/verbs/libibverbs.exports)
but the ibv_cmd_* kernel commands, which the table names as a group, must appear there
in backquotes. Lists the missing ones.

usage: check_doc_table.py EXPORTS DOC
"""
import re
import sys


def main():
    exports, doc = sys.argv[1:3]
    names = set()
    with open(exports) as f:
        for line in f:
            name = line.strip().split('@')[0]
            if re.match(r'(ibv_|mbps_to_ibv_rate$|mult_to_ibv_rate$)', name) and \
                    not name.startswith('ibv_cmd_'):
                names.add(name)
    text = open(doc).read()
    m = re.search(r'^## Every entry point\n(.*?)^## ', text, re.S | re.M)
    if not m:
        print('check_doc_table: no "## Every entry point" section in %s' % doc)
        return 1
    listed = set(re.findall(r'`([A-Za-z_0-9]+)`', m.group(1)))
    missing = sorted(names - listed)
    print('check_doc_table: %d exported entry points, %d in the table, %d missing%s' %
          (len(names), len(names) - len(missing), len(missing),
           ': ' + ' '.join(missing) if missing else ''))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
