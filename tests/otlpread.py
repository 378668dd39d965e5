"""Read OTLP profiles with the official bindings (the PyPI package
opentelemetry-proto, installed by scripts/setup --test-deps beside the peers)
and print them as JSON, for the tests.

    otlpread.py FILE         a ProfilesData message (pyperf-bpf -o x.otlp)
    otlpread.py --framed F   the Collector's file exporter in proto format:
                             messages each after a 4-byte big-endian length

Prints {"requests": N, "checks": [...], "resources": [...]} where each
resource is {"attrs": {...}, "scope": [name, version], "profiles": [{"sample_type":
[type, unit], "period_type": [...], "period", "time", "duration", "profile_id",
"samples": [{"value", "attrs": {...}, "stack": [{"name", "file", "line",
"type", "mapping", "build_id"}, ...] (leaf first)}]}]}.  "checks" lists what
breaks the format's rules (entry 0 of each table not its zero value, an
index out of range), checked here so that the tests can assert it is empty.
Run by the tests through the peers' Python: conftest.otlp_decode."""
import json
import struct
import sys

from opentelemetry.proto.profiles.v1development import profiles_pb2


def any_value(v, strings):
    kind = v.WhichOneof("value")
    if kind == "string_value_strindex":        # a string of the dictionary's table
        return strings[v.string_value_strindex] if v.string_value_strindex < len(strings) else "?"
    return getattr(v, kind) if kind else None


def zero(m):
    """Is message m its zero value?  A present but empty submessage counts as
    zero (the Collector writes attribute_table[0] with an empty AnyValue)."""
    for field, value in m.ListFields():
        if field.message_type is None or not zero(value):
            return False
    return True


def decode(data, checks):
    msg = profiles_pb2.ProfilesData()
    msg.ParseFromString(data)
    d = msg.dictionary
    strings = list(d.string_table)
    if not strings or strings[0] != "":
        checks.append("string_table[0] is not the empty string")
    for name in ("mapping_table", "location_table", "function_table", "link_table",
                 "attribute_table", "stack_table"):
        table = getattr(d, name)
        if not table or not zero(table[0]):
            checks.append(f"{name}[0] is not the zero value")

    def s(i):
        if not 0 <= i < len(strings):
            checks.append(f"string index {i} out of range")
            return "?"
        return strings[i]

    def attrs(indices):
        out = {}
        for i in indices:
            if not 0 < i < len(d.attribute_table):
                checks.append(f"attribute index {i} out of range")
                continue
            a = d.attribute_table[i]
            out[s(a.key_strindex)] = any_value(a.value, strings)
        return out

    def frame(li):
        if not 0 < li < len(d.location_table):
            checks.append(f"location index {li} out of range")
            return {}
        loc = d.location_table[li]
        line = loc.lines[0] if loc.lines else None
        fn = d.function_table[line.function_index] if line else None
        out = {"name": s(fn.name_strindex) if fn else "?",
               "file": s(fn.filename_strindex) if fn else "",
               "line": line.line if line else 0,
               "type": attrs(loc.attribute_indices).get("profile.frame.type"),
               "mapping": None, "build_id": None}
        if loc.mapping_index:
            m = d.mapping_table[loc.mapping_index]
            out["mapping"] = s(m.filename_strindex)
            out["build_id"] = attrs(m.attribute_indices).get("process.executable.build_id.gnu")
        return out

    resources = []
    for rp in msg.resource_profiles:
        # keys and string values may be given inline or, as the Collector
        # writes them, as indices into the string table
        res = {"attrs": {kv.key or s(kv.key_strindex): any_value(kv.value, strings)
                         for kv in rp.resource.attributes},
               "profiles": []}
        for sp in rp.scope_profiles:
            res["scope"] = [sp.scope.name, sp.scope.version]
            for p in sp.profiles:
                prof = {"sample_type": [s(p.sample_type.type_strindex), s(p.sample_type.unit_strindex)],
                        "period_type": [s(p.period_type.type_strindex), s(p.period_type.unit_strindex)],
                        "period": p.period, "time": p.time_unix_nano, "duration": p.duration_nano,
                        "profile_id": p.profile_id.hex(), "samples": []}
                for smp in p.samples:
                    if not 0 <= smp.stack_index < len(d.stack_table):
                        checks.append(f"stack index {smp.stack_index} out of range")
                        continue
                    stack = d.stack_table[smp.stack_index]
                    prof["samples"].append({"value": sum(smp.values), "attrs": attrs(smp.attribute_indices),
                                            "stack": [frame(i) for i in stack.location_indices]})
                res["profiles"].append(prof)
        resources.append(res)
    return resources


def main():
    framed = sys.argv[1] == "--framed"
    data = open(sys.argv[-1], "rb").read()
    checks, resources, n = [], [], 0
    if framed:
        off = 0
        while off + 4 <= len(data):
            size, = struct.unpack(">I", data[off:off + 4])
            resources += decode(data[off + 4:off + 4 + size], checks)
            off += 4 + size
            n += 1
        if off != len(data):
            checks.append(f"{len(data) - off} bytes after the last whole message")
    else:
        resources, n = decode(data, checks), 1
    json.dump({"requests": n, "checks": checks, "resources": resources}, sys.stdout)


if __name__ == "__main__":
    main()
