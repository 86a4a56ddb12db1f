"""Prints `status_name`, the NppStatus names and descriptions of nppdefs.h (its enum's comments),
for src/npp/sys.rs (run by regenerate.sh)."""
import re
import sys

text = open(sys.argv[1]).read()
end = re.search(r"\}\s*NppStatus;", text).start()
body = text[text.rindex("{", 0, end) + 1 : end]
rows = []
for m in re.finditer(r"^[ \t]*(NPP_\w+)[ \t]*=[ \t]*(-?\d+)[ \t]*,?[ \t]*(?:/\*\*<[ \t]*(.*?)[ \t]*\*/)?", body, re.M):
    name, value, doc = m.group(1), int(m.group(2)), (m.group(3) or "").strip()
    doc = re.sub(r"\s+", " ", doc).replace("\\\\", "\\\\\\\\").replace('"', '\\\\"')
    rows.append((value, name, doc or name))
seen = set()
print("/// The name and description of an `NppStatus` value, when nppdefs.h has it.")
print("pub fn status_name(status: NppStatus) -> Option<(&'static str, &'static str)> {")
print("    Some(match status {")
for value, name, doc in rows:
    if value in seen:  # aliases (NPP_ERROR = NPP_...): the first name wins
        continue
    seen.add(value)
    print(f'        {value} => ("{name}", "{doc}"),')
print("        _ => return None,")
print("    })")
print("}")
