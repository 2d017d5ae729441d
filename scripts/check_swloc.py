#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_swloc.py: drivers/sw/sw_loc.h declares what each file of the sw
driver shares, under the heading of the file that defines it, as Linux
rxe's rxe_loc.h does.

usage: check_swloc.py TOPDIR [--nm ARCHIVE]

The driver's file map is the table of doc/architecture.md that follows
"**The software engine**": its rows name files of drivers/sw (first code
span of each row). Checked:
  * the map names every file of drivers/sw once, and only those;
  * sw_loc.h holds declarations only (prototypes and extern variables,
    besides its include guard and #include lines), each under a heading
    comment that names a file alone ("/* sw_cq.c */"); one heading per
    .c file of drivers/sw, in the order of the map;
  * every function and variable a .c file of drivers/sw defines without
    "static" is declared in sw_loc.h, once, under that file's heading; no
    declaration there names something no file defines;
  * no other header of drivers/sw and no .c file declares such a name
    (prototype or extern).
The definitions are read from the sources (top-level definitions without
"static"; RTE_LOG_REGISTER's variable). With --nm, the defined global
symbols of ARCHIVE (the built libdpv_sw.a, one member per .c file) must be
the same, file by file, as the ones read from the sources.
Prints each problem; exit 1 if any.
"""
import os
import re
import subprocess
import sys

SW = os.path.join('drivers', 'sw')
LOC = 'sw_loc.h'
ARCH_DOC = os.path.join('doc', 'architecture.md')
MAP_MARK = '**The software engine**'
HEADING = re.compile(r'^/\*\s*(\S+\.c)\s*\*/$')
IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
# macros that define a variable of external linkage: its name is the first argument
VAR_MACROS = ('RTE_LOG_REGISTER', 'RTE_LOG_REGISTER_DEFAULT', 'RTE_LOG_REGISTER_SUFFIX')
KEYWORDS = {'static', 'extern', 'typedef', 'inline', 'const', 'volatile', 'struct', 'union',
            'enum', 'unsigned', 'signed', 'int', 'char', 'short', 'long', 'void', 'bool',
            '_Atomic', '_Bool', '__thread', '_Thread_local', 'restrict', '__restrict'}


def file_map(top):
    """The files the map names, in its order, with their line numbers."""
    out = []
    lines = open(os.path.join(top, ARCH_DOC), encoding='utf-8').read().split('\n')
    start = next((i for i, l in enumerate(lines) if l.startswith(MAP_MARK)), None)
    if start is None:
        return None
    i = start
    while i < len(lines) and not lines[i].startswith('|'):
        i += 1
    while i < len(lines) and lines[i].startswith('|'):
        m = re.match(r'\|\s*`([^`]+)`', lines[i])
        if m:
            out.append((m.group(1), i + 1))
        i += 1
    return out


def strip_code(text, keep_headings=False):
    """text without comments, string and character literals, preprocessor
    lines; line structure kept. With keep_headings, a comment alone on its
    line that names a .c file stays."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            com = text[i:j]
            line_start = text.rfind('\n', 0, i) + 1
            line_end = text.find('\n', j)
            line_end = n if line_end < 0 else line_end
            if keep_headings and HEADING.match(text[line_start:line_end].strip()) \
                    and not text[line_start:i].strip() and not text[j:line_end].strip():
                out.append(com)
            else:
                out.append('\n' * com.count('\n') + ' ')
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        elif c == '#' and not text[text.rfind('\n', 0, i) + 1:i].strip():
            j = i
            while True:
                k = text.find('\n', j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != '\\':
                    break
                j = k + 1
            out.append('\n' * text[i:k].count('\n'))
            out.append(' ')
            i = k
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def top_level(code):
    """Top-level items of stripped C code: (kind, text, line) with kind
    'def' (text: what precedes a brace at depth 0: a function's signature,
    or a struct/enum/initializer head) or 'decl' (a statement up to ';')."""
    items, acc, acc_line = [], [], None
    i, n, line, paren = 0, len(code), 1, 0
    while i < n:
        c = code[i]
        if c == '\n':
            line += 1
        if c == '(':
            paren += 1
        elif c == ')':
            paren -= 1
        if c == '{' and paren == 0:
            head = ''.join(acc).strip()
            depth, j = 1, i + 1
            while j < n and depth:
                if code[j] == '{':
                    depth += 1
                elif code[j] == '}':
                    depth -= 1
                elif code[j] == '\n':
                    line += 1
                j += 1
            if is_function_head(head):
                items.append(('def', head, acc_line))
                acc, acc_line = [], None
            else:
                acc.append(' {} ')
            i = j
            continue
        if c == ';' and paren == 0:
            stmt = ''.join(acc).strip()
            if stmt:
                items.append(('decl', stmt, acc_line))
            acc, acc_line = [], None
        else:
            if acc_line is None and not c.isspace():
                acc_line = line
            acc.append(c)
        i += 1
    return items


def normalize(s):
    s = re.sub(r'__attribute__\s*\(\(.*?\)\)', ' ', s)
    s = re.sub(r'_Atomic\s*\(([^()]*)\)', r'_Atomic \1', s)
    return ' '.join(s.split())


def is_function_head(head):
    h = normalize(head)
    return bool(re.search(r'\)\s*$', h)) and '=' not in h and '(' in h


def func_name(head):
    """The name a function signature or prototype declares."""
    h = normalize(head)
    m = re.search(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(', h)
    return m.group(1) if m else None


def var_name(decl):
    """The name a variable declaration declares (its first declarator)."""
    d = normalize(decl)
    d = re.split(r'[=\[,]', d, maxsplit=1)[0]
    names = [t for t in IDENT.findall(d) if t not in KEYWORDS]
    return names[-1] if names else None


def first_word(s):
    m = IDENT.match(normalize(s))
    return m.group(0) if m else ''


def definitions(path):
    """(non-static names defined, [(name, line) of non-static declarations])
    of a .c file."""
    code = strip_code(open(path, encoding='utf-8').read())
    defs, decls = {}, []
    for kind, text, line in top_level(code):
        if not IDENT.search(text):
            continue
        if kind == 'def':
            name = func_name(text)
            if not name or name.isupper():
                continue                        # RTE_INIT(...) and the like
            pre = normalize(text).split(name + '(', 1)[0].split(name + ' (', 1)[0]
            if 'static' not in IDENT.findall(pre):
                defs[name] = line
            continue
        head = first_word(text)
        if head in ('static', 'typedef'):
            continue
        if head.isupper() and re.match(r'\s*[A-Z_][A-Z0-9_]*\s*\(', text):
            if head in VAR_MACROS:
                defs[IDENT.findall(text.split('(', 1)[1])[0]] = line
            continue                            # other macros at file scope
        if re.fullmatch(r'(struct|union|enum)\s*[A-Za-z0-9_]*\s*\{\}', normalize(text)):
            continue                            # a type definition
        if head == 'extern' or ('=' not in text and is_function_head(text)):
            name = func_name(text) if is_function_head(text) else var_name(text)
            decls.append((name, line))
            continue
        name = var_name(text)
        if name:
            defs[name] = line
    return defs, decls


def loc_groups(path):
    """sw_loc.h: ([(heading, line)], {name: [(heading, line)]}, [problems])."""
    text = open(path, encoding='utf-8').read()
    headings, decls, problems = [], {}, []
    for ln, l in enumerate(text.split('\n'), 1):
        s = l.strip()
        if s.startswith('#') and not re.match(r'#\s*include\b', s) \
                and not re.match(r'#\s*(ifndef|define)\s+SW_LOC_H\s*$|#\s*endif\b', s):
            problems.append(f'{SW}/{LOC}:{ln}: not a declaration: {s}')
    code = strip_code(text, keep_headings=True)
    current, start, depth = None, None, 0
    for m in re.finditer(r'/\*\s*(\S+\.c)\s*\*/|[;{}]|\S', code):
        tok = m.group(0)
        line = code.count('\n', 0, m.start()) + 1
        if tok in '{}' or depth:
            depth += {'{': 1, '}': -1}.get(tok, 0)
            if tok == '{' and depth == 1:
                stmt = normalize(code[start:m.start()] if start is not None else '')
                problems.append(f'{SW}/{LOC}:{line}: a definition, only declarations belong '
                                f'here: {stmt[:60]}')
            start = None
        elif m.group(1):
            current = m.group(1)
            headings.append((current, line))
        elif tok == ';':
            if start is None:
                continue
            stmt = code[start:m.start()]
            sline = code.count('\n', 0, start) + 1
            start = None
            head = first_word(stmt)
            if head in ('static', 'typedef', 'struct', 'union', 'enum') and '(' not in stmt:
                problems.append(f'{SW}/{LOC}:{sline}: not a declaration: {normalize(stmt)[:60]}')
                continue
            if is_function_head(stmt):
                name = func_name(stmt)
            elif head == 'extern':
                name = var_name(stmt)
            else:
                problems.append(f'{SW}/{LOC}:{sline}: a definition (no extern): '
                                f'{normalize(stmt)[:60]}')
                continue
            if current is None:
                problems.append(f'{SW}/{LOC}:{sline}: {name} before the first heading')
            decls.setdefault(name, []).append((current, sline))
        elif start is None:
            start = m.start()
    return headings, decls, problems


def other_decls(path):
    """Prototypes and extern declarations at the top level of a header."""
    code = strip_code(open(path, encoding='utf-8').read())
    out = []
    for kind, text, line in top_level(code):
        if kind == 'def':
            continue
        head = first_word(text)
        if head in ('static', 'typedef'):
            continue
        if head == 'extern':
            out.append((var_name(text) if not is_function_head(text) else func_name(text), line))
        elif is_function_head(text) and not head.isupper():
            out.append((func_name(text), line))
    return out


def nm_symbols(archive):
    """{file.c: set of defined global symbols} of a static library."""
    res = subprocess.run(['nm', '-g', '--defined-only', archive], capture_output=True, text=True,
                         check=True)
    out, cur = {}, None
    for l in res.stdout.split('\n'):
        m = re.match(r'^(.*\.c)\.o:$', l)
        if m:
            cur = os.path.basename(m.group(1)).split('_drivers_sw_')[-1]
            out.setdefault(cur, set())
            continue
        f = l.split()
        if cur and len(f) == 3:
            out[cur].add(f[2])
    return out


def check_map(fmap, files):
    """The file map names every file of drivers/sw once, and only those."""
    problems = []
    mapped = [f for f, _ in fmap]
    for f, ln in fmap:
        if f not in files:
            problems.append(f'{ARCH_DOC}:{ln}: the file map names {f}: not a file of {SW}')
        if mapped.count(f) > 1:
            problems.append(f'{ARCH_DOC}:{ln}: the file map names {f} twice')
    for f in files:
        if f not in mapped:
            problems.append(f'{ARCH_DOC}: the file map does not name {SW}/{f}')
    return problems


def check_headings(headings, cfiles, mapped):
    """One heading per .c file, in the order of the file map."""
    problems = []
    names = [h for h, _ in headings]
    for h, ln in headings:
        if h not in cfiles:
            problems.append(f'{SW}/{LOC}:{ln}: heading /* {h} */ names no .c file of {SW}')
        if names.count(h) > 1:
            problems.append(f'{SW}/{LOC}:{ln}: a second heading /* {h} */')
    for f in cfiles:
        if f not in names:
            problems.append(f'{SW}/{LOC}: {f} has no heading /* {f} */')
    order = [f for f in mapped if f in cfiles]
    got = [h for h in names if h in cfiles]
    if got != order and sorted(set(got)) == sorted(set(order)):
        i = next(i for i, (a, b) in enumerate(zip(got, order)) if a != b)
        problems.append(f'{SW}/{LOC}: group {i + 1} is /* {got[i]} */, the file map has '
                        f'{order[i]} there (groups: {", ".join(got)})')
    return problems


def check_decls(decls, defined):
    """Each declaration under the heading of the file defining it; each
    non-static definition declared."""
    problems = []
    for name, where in sorted(decls.items()):
        if len(where) > 1:
            problems.append(f'{SW}/{LOC}:{where[1][1]}: {name} declared again '
                            f'(first at line {where[0][1]})')
        heading, ln = where[0]
        if name not in defined:
            problems.append(f'{SW}/{LOC}:{ln}: {name} is defined in no file of {SW} '
                            f'(or only static)')
        elif heading != defined[name]:
            problems.append(f'{SW}/{LOC}:{ln}: {name} is under /* {heading} */ but defined in '
                            f'{defined[name]}')
    for name, f in sorted(defined.items(), key=lambda x: (x[1], x[0])):
        if name not in decls:
            problems.append(f'{SW}/{f}: {name} is not static and not declared in {LOC} '
                            f'(under /* {f} */)')
    return problems


def check_nm(archive, cfiles, src_syms):
    """The archive's defined global symbols are the ones read from the sources."""
    try:
        syms = nm_symbols(archive)
    except (OSError, subprocess.CalledProcessError) as e:
        return [f'{archive}: nm failed: {e}']
    problems = []
    for f in cfiles:
        if f not in syms:
            problems.append(f'{archive}: no member for {f}')
            continue
        for s in sorted(syms[f] - src_syms[f]):
            problems.append(f'{SW}/{f}: nm finds {s}, not found in the source')
        for s in sorted(src_syms[f] - syms[f]):
            problems.append(f'{SW}/{f}: {s} read from the source, nm does not find it')
    return problems


def main(argv):
    if not argv or len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != '--nm'):
        print(__doc__.strip())
        return 2
    top, archive = argv[0], argv[2] if len(argv) == 3 else None
    sw = os.path.join(top, SW)
    files = sorted(f for f in os.listdir(sw) if not f.startswith('.'))
    cfiles = [f for f in files if f.endswith('.c')]
    problems = []

    fmap = file_map(top)
    if fmap is None:
        problems.append(f'{ARCH_DOC}: no file map ("{MAP_MARK}" and its table)')
        fmap = []
    problems += check_map(fmap, files)
    mapped = [f for f, _ in fmap]

    headings, decls, p = loc_groups(os.path.join(sw, LOC))
    problems += p + check_headings(headings, cfiles, mapped)

    defined, src_syms = {}, {}                  # name -> file; file -> names
    for f in cfiles:
        defs, cdecls = definitions(os.path.join(sw, f))
        src_syms[f] = set(defs)
        for name in defs:
            if name in defined:
                problems.append(f'{SW}/{f}: {name} is also defined in {defined[name]}')
            defined[name] = f
        for name, ln in cdecls:
            problems.append(f'{SW}/{f}:{ln}: declares {name}: declarations belong in {LOC}')
    problems += check_decls(decls, defined)

    for h in files:
        if h.endswith('.h') and h != LOC:
            for name, ln in other_decls(os.path.join(sw, h)):
                problems.append(f'{SW}/{h}:{ln}: declares {name}: declarations belong in {LOC}')

    if archive:
        problems += check_nm(archive, cfiles, src_syms)

    for p in problems:
        print(p)
    print(f'{len(cfiles)} .c files, {len(headings)} headings, {len(decls)} declarations in {LOC}, '
          f'{len(defined)} non-static definitions{" (checked with nm)" if archive else ""}; '
          f'{len(mapped)} files in the map; {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
