#!/usr/bin/env bash
# Regenerates the tshark reference table and fails if it differs from the checked-in one:
# the table the tests trust must be what tshark says today. Skips (77) without tshark.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
diff -u "$here/data/pcap_ref.tsv" <("$here/gen_pcap_ref.sh" "${UROCE_PCAP_DIR:?}") >&2
echo "data/pcap_ref.tsv matches tshark $(tshark -v 2>/dev/null | head -1 | awk '{print $3}')"
