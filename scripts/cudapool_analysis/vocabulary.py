"""cudapool_analysis/vocabulary.py: the names of the allocation log, cudapool.log/1
(docs/log-format.md), written once: the event actions, the fields of the header, the events and
the summary line (its leaks and loaded modules) with the kind of value each holds, the oom
causes, and the statistics of torch.cuda.memory_stats() that the summary line carries
(pool/stats.cpp, for_each_stat).

tests/cli/vocabulary_check.sh compares these lists with the C++ source that writes the log
(log/record.cpp action_name, log/format_event.cpp, log/format_lines.cpp, pool/stats.cpp,
pool/oom.cpp), so the two cannot drift. Code that names an action or a statistic takes it
through actions() or stat(), which fail at import on a name not listed here.

Not here: parsing (reader.py), what the names mean (the docs), any judgement of a log.
"""

LOG_SCHEMA = "cudapool.log/1"
LOG_SCHEMA_PREFIX = "cudapool.log/"     # any major version is read (the report warns)
REPORT_SCHEMA = "cudapool.report/1"     # what `cudapool report --json` prints
SUMMARY_ACTION = "summary"              # the summary line's action: not an event

# ---- kinds of values ---------------------------------------------------------------------------
UINT = "unsigned integer"               # a JSON integer, 0 <= v < 2**64
INT = "integer"                         # a JSON integer, -2**63 <= v < 2**63
HEX = "hex string"                      # "0x...", a 64-bit unsigned value
STR = "string"
BOOL = "bool"
LIST = "list"
OBJECT = "object"
HEX_LIST = "list of hex strings"
STR_LIST = "list of strings"

UINT_LIMIT = 1 << 64                    # sizes, block sizes, addresses, times, counts: below it
INT64_MIN, INT64_LIMIT = -(1 << 63), 1 << 63   # the summary's statistics (std::int64_t)
DEV_LIMIT = 1 << 16                     # a device ordinal (dev, devices[].id): 0 to 65535
CTX_LIMIT = 1 << 16                     # a context number (ctx): the shim writes at most 255

PYTHON_TYPES = {UINT: int, INT: int, HEX: str, STR: str, BOOL: bool, LIST: list, OBJECT: dict,
                HEX_LIST: list, STR_LIST: list}

# ---- actions: log/record.cpp action_name(), in its order ---------------------------------------
ACTIONS = (
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
    "segment_unmap", "oom", "empty_cache", "alloc_async", "free_async", "alloc_managed",
    "vmm_create", "vmm_release", "vmm_map", "vmm_unmap", "alloc_host", "free_host",
    "alloc_pitch", "free_unowned", "bad_free", "ipc_refused", "context_dropped",
    "stream_created", "stream_first_work", "segment_refused")
KNOWN_ACTIONS = frozenset(ACTIONS)


def actions(*names):
    """The frozenset of names, each of which must be an action of the log (a typo or an action
    the writer no longer has fails here, at import)."""
    unknown = [n for n in names if n not in KNOWN_ACTIONS]
    if unknown:
        raise ValueError("not actions of %s: %s" % (LOG_SCHEMA, ", ".join(unknown)))
    return frozenset(names)


# Events that change the layout of a device's memory: blocks in segments, mapped pages.
LAYOUT_ACTIONS = actions("alloc", "free_requested", "free_completed", "segment_alloc",
                         "segment_free", "segment_map", "segment_unmap", "context_dropped")

# ---- the header (line 1): log/format_lines.cpp format_header() ---------------------------------
HEADER_FIELDS = (
    ("schema", STR), ("version", STR), ("pid", UINT), ("host", STR), ("executable", STR),
    ("argv", STR_LIST), ("start_time", STR), ("start_unix_ns", UINT), ("conf", STR),
    ("conf_source", STR), ("options", OBJECT), ("devices", LIST))
# Written when not 0: CLOCK_MONOTONIC read with start_unix_ns (wall time of an event:
# start_unix_ns + t_ns - start_t_ns); logs of earlier versions have none.
HEADER_OPTIONAL_FIELDS = (("start_t_ns", UINT),)
HEADER_DEVICE_FIELDS = (("id", INT), ("name", STR), ("total_memory", UINT))
# Read when present, not written by this version's shim: the process's rank, directly or as the
# environment variables the log's %r takes (log/path_template.cpp rank_from_env), in that order.
HEADER_RANK_FIELDS = (("rank", UINT), ("environment", OBJECT), ("env", OBJECT))
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")

# ---- events: log/format_event.cpp format_event_unchecked() -------------------------------------
EVENT_FIELDS = (            # in every event
    ("seq", UINT), ("t_ns", UINT), ("tid", UINT), ("dev", INT), ("action", STR), ("ptr", HEX),
    ("size", UINT))
OOM_FIGURES = ("segment_size", "device_total", "device_free", "cap", "reserved", "allocated",
               "free_blocks", "largest_free_block")
OPTIONAL_FIELDS = (         # when not zero, or for some actions only (docs/log-format.md)
    ("ctx", UINT), ("block_size", UINT), ("segment", HEX), ("stream", HEX), ("cache_hit", BOOL),
    ("latency_ns", UINT), ("error", INT), ("entry", STR), ("caller", STR),
    ("backtrace", HEX_LIST)) + tuple((name, UINT) for name in OOM_FIGURES) + (("cause", STR),)
OOM_CAUSES = ("fragmentation", "cap", "shortage")   # pool/oom.cpp oom_cause_name()

# ---- the summary line: log/format_lines.cpp format_summary() -----------------------------------
SUMMARY_FIELDS = (
    ("schema", STR), ("action", STR), ("seq", UINT), ("t_ns", UINT), ("events", UINT),
    ("devices", OBJECT), ("leaks", LIST), ("log_errors", OBJECT))
# Written when backtraces were recorded (CUDAPOOL_BACKTRACE); logs of earlier versions have none.
SUMMARY_OPTIONAL_FIELDS = (("modules", LIST),)
SUMMARY_DEVICE_FIELDS = (("stats", OBJECT), ("fences", OBJECT))   # devices["N"]
LEAK_FIELDS = (
    ("dev", INT), ("ptr", HEX), ("size", UINT), ("block_size", UINT), ("seq", UINT),
    ("t_ns", UINT), ("tid", UINT), ("backtrace", STR_LIST))
# modules[]: every loaded object's address range [base, end), sorted by base, at most 4096
# (log/format.h kMaxModules): how a reader names a return address (library + offset, frames.py).
MODULE_FIELDS = (("base", HEX), ("end", HEX), ("path", STR))
LOG_ERROR_FIELDS = (("write_failed", BOOL), ("records_lost", UINT))

# ---- statistics: torch.cuda.memory_stats() names (pool/stats.cpp for_each_stat) ----------------
STAT_ARRAYS = ("active", "active_bytes", "allocated_bytes", "allocation", "inactive_split",
               "inactive_split_bytes", "requested_bytes", "reserved_bytes", "segment")
STAT_POOLS = ("all", "small_pool", "large_pool")         # ARRAY.POOL.FIELD
STAT_FIELDS = ("current", "peak", "allocated", "freed")
STAT_SINGLES = ("oversize_allocations", "oversize_segments")   # NAME.FIELD
STAT_COUNTERS = ("max_split_size", "num_alloc_retries", "num_device_alloc", "num_device_free",
                 "num_ooms", "num_sync_all_streams")
STAT_NAMES = tuple(sorted(
    ["%s.%s.%s" % (a, p, f) for a in STAT_ARRAYS for p in STAT_POOLS for f in STAT_FIELDS]
    + ["%s.%s" % (s, f) for s in STAT_SINGLES for f in STAT_FIELDS] + list(STAT_COUNTERS)))
_STAT_SET = frozenset(STAT_NAMES)


def stat(name):
    """name, which must be a statistic of the summary line (fails at import otherwise)."""
    if name not in _STAT_SET:
        raise ValueError("not a statistic of %s: %s" % (LOG_SCHEMA, name))
    return name


# ---- values of a kind ---------------------------------------------------------------------------

def hex_value(v):
    """The value of a hex string ("0x" then hex digits, below 2**64), or None."""
    if type(v) is not str or v[:2] not in ("0x", "0X") or len(v) < 3:
        return None
    try:
        n = int(v, 16)
    except ValueError:
        return None
    return n if n < UINT_LIMIT else None


def fits(value, kind):
    """Whether value is of kind (an integer kind never takes true/false, nor a float)."""
    if kind == UINT:
        return type(value) is int and 0 <= value < UINT_LIMIT
    if kind == INT:
        return type(value) is int and INT64_MIN <= value < INT64_LIMIT
    if kind == HEX:
        return hex_value(value) is not None
    if kind == HEX_LIST:
        return type(value) is list and all(hex_value(v) is not None for v in value)
    if kind == STR_LIST:
        return type(value) is list and all(type(v) is str for v in value)
    return type(value) is PYTHON_TYPES[kind]
