# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Sourced by the checks that read a loopback capture of our iWARP traffic
# with tshark (tests/provider/capture_check.sh,
# tests/interop/demo_capture_check.sh, demo_capture_v2_check.sh): the
# options every one of their tshark runs takes.
#
# - tcp.reassemble_out_of_order: segments sent back to back from two CPUs
#   may reach the capture out of order.
# - tcp.try_heuristic_first: MPA is found by tshark's heuristic, and a
#   connection whose ephemeral port is a port registered to another
#   protocol (34980, EtherCAT, came up in CI) was given to that protocol
#   instead, its frames counted as malformed.  Heuristics first: every
#   segment is offered to MPA.
# A string the shell splits where it is used (capture_check.sh is POSIX
# sh, which has no arrays).
tshark_mpa_opts="-o tcp.reassemble_out_of_order:TRUE -o tcp.try_heuristic_first:TRUE -n"
