/*
 * collectors.kineto._scan: one chunk of a Kineto trace's ``traceEvents`` array, scanned into
 * columns in one pass, without a Python object per event.
 *
 * The Python reader (collectors/kineto/stream.py, decode.py, rows.py, columns.py) is the
 * reference: for every chunk this scanner accepts, collectors/kineto/native.py builds exactly the
 * columns the msgspec path builds (tests/collectors/kineto/test_kineto_native.py compares the two
 * on every shared trace and on generated JSON).  Whatever the scanner does not take on, or
 * cannot prove valid, it declines (``scan`` returns None) and the chunk goes through the msgspec
 * path: invalid JSON, an unknown ``ph``, ``args`` that
 * are not objects, escaped keys, a lone surrogate, invalid UTF-8, nesting deeper than MAX_DEPTH,
 * numbers out of the double range, times that need the decimal reading and are not plain
 * decimals, counter (``C``) events, booleans inside ``grid``/``block``, non-ASCII keys, M-event pids that are not
 * integers, strings or null.  Declining is always safe: the msgspec path decides.
 *
 * What it returns for an accepted chunk (a tuple, read by collectors/kineto/native.py):
 *   n_events     events in the chunk (every phase)
 *   end          offset just after the closing ']' (tail mode), else the buffer's length
 *   names        distinct strings of event names and ``args.kernel`` (ids index this list)
 *   cats         distinct categories of the candidates
 *   kinds        distinct strings of ``args.kind``
 *   raws         distinct raw texts of the four argument columns (``Input Dims``...)
 *   cols         dict: column name -> bytearray (int64 / float64 / int32 / uint8 per
 *                candidate; -1: not a string / absent, NaN: not a number)
 *   comms        list of (candidate, key index, raw value bytes): the collective metadata keys
 *                (decode.COMM_KEYS) at the top level of each candidate's args
 *                mem_* columns: one per sample of the ``[memory]`` instant events
 *   metas        list of (name, pid, tid, raw args bytes): the last M event of each
 *                (name, pid, tid) of the kept names, in order of first appearance
 * A candidate is an ``X`` event whose ``cat`` is a string other than ``Trace`` (an activity
 * row, kept or rejected by the rows stage).
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* strtod_l, newlocale */
#include <Python.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

static locale_t C_LOCALE; /* for strtod_l: JSON numbers whatever the process's locale */

#define MAX_DEPTH 64
#define LIMIT_US 4611686018427387LL       /* 2**62 ns // 1000: the time limit in us */
#define TIME_LIMIT_NS 4611686018427387904LL /* 2**62 */
#define EXACT_FLOAT_LIMIT_US 8796093022208.0 /* 2**43 */

/* rejection codes (collectors/kineto/columns.py) */
#define OK 0
#define NOT_A_NUMBER 1
#define OUT_OF_RANGE 2
#define NEGATIVE_DUR 3

typedef struct {
    const unsigned char *s; /* next byte */
    const unsigned char *end;
    const unsigned char *base;
    int depth;
    int count_markers; /* while reading an X event's args */
    int markers;       /* occurrences of a collective marker key's text (comm_markers) */
} P;

/* ------------------------------------------------------------------------------------------ */
/* growable byte buffer */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *d = (char *)PyMem_RawRealloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *p, size_t n) {
    if (buf_reserve(b, n)) return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b) {
    PyMem_RawFree(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* interning: distinct byte strings -> dense ids, in order of first appearance */

typedef struct {
    Buf arena;      /* the strings' bytes */
    Buf offsets;    /* size_t start, size_t len per id */
    uint32_t *slots; /* id + 1, 0 = empty */
    uint64_t *hashes;
    size_t cap;     /* slots */
    size_t n;
    int32_t last;   /* id of the last string looked up + 1 (0: none): runs of one string */
} Intern;

static inline uint64_t load64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* a multiply-xorshift hash, eight bytes at a time */
static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    while (n >= 8) {
        h = (h ^ load64(p)) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static int intern_grow(Intern *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    uint32_t *slots = (uint32_t *)PyMem_RawCalloc(cap, sizeof(uint32_t));
    uint64_t *hashes = (uint64_t *)PyMem_RawCalloc(cap, sizeof(uint64_t));
    if (!slots || !hashes) {
        PyMem_RawFree(slots);
        PyMem_RawFree(hashes);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->cap = cap;
    return 0;
}

static int32_t intern_lookup(Intern *t, const unsigned char *p, size_t n);

/* id of the bytes p[0..n), added when new; -1 on memory error */
static int32_t intern(Intern *t, const unsigned char *p, size_t n) {
    if (t->last) {
        const size_t *o = (const size_t *)t->offsets.data + 2 * (t->last - 1);
        if (o[1] == n && memcmp(t->arena.data + o[0], p, n) == 0) return t->last - 1;
    }
    int32_t id = intern_lookup(t, p, n);
    t->last = id + 1;
    return id;
}

static int32_t intern_lookup(Intern *t, const unsigned char *p, size_t n) {
    if ((t->n + 1) * 2 > t->cap && intern_grow(t)) return -1;
    uint64_t h = hash_bytes(p, n);
    size_t j = h & (t->cap - 1);
    const size_t *offs;
    while (t->slots[j]) {
        if (t->hashes[j] == h) {
            uint32_t id = t->slots[j] - 1;
            offs = (const size_t *)t->offsets.data + 2 * id;
            if (offs[1] == n && memcmp(t->arena.data + offs[0], p, n) == 0) return (int32_t)id;
        }
        j = (j + 1) & (t->cap - 1);
    }
    size_t rec[2] = {t->arena.len, n};
    if (buf_put(&t->arena, p, n) || buf_put(&t->offsets, rec, sizeof rec)) return -1;
    t->slots[j] = (uint32_t)(t->n + 1);
    t->hashes[j] = h;
    return (int32_t)t->n++;
}

static void intern_free(Intern *t) {
    buf_free(&t->arena);
    buf_free(&t->offsets);
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    memset(t, 0, sizeof *t);
}

/* the interned strings as a list of str (UTF-8) or bytes */
static PyObject *intern_list(Intern *t, int as_str) {
    PyObject *out = PyList_New((Py_ssize_t)t->n);
    if (!out) return NULL;
    for (size_t i = 0; i < t->n; i++) {
        const size_t *offs = (const size_t *)t->offsets.data + 2 * i;
        const char *p = t->arena.data + offs[0];
        PyObject *o = as_str ? PyUnicode_DecodeUTF8(p, (Py_ssize_t)offs[1], "strict")
                             : PyBytes_FromStringAndSize(p, (Py_ssize_t)offs[1]);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, o);
    }
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* JSON scanning: every function returns 0 on success, -1 to decline the chunk */

static inline void ws(P *p) {
    while (p->s < p->end) {
        unsigned char c = *p->s;
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
        p->s++;
    }
}

static inline int expect(P *p, unsigned char c) {
    ws(p);
    if (p->s >= p->end || *p->s != c) return -1;
    p->s++;
    return 0;
}

/* the length of a valid UTF-8 sequence starting at s (s[0] >= 0x80), 0 when invalid */
static int utf8_len(const unsigned char *s, const unsigned char *end) {
    unsigned char c = s[0];
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (end - s < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s[i]);
        if (h < 0) return -1;
        v = (v << 4) | (uint32_t)h;
    }
    *out = v;
    return 0;
}

/* decode.COMM_MARKER_KEYS: the JSON text of each (quotes included) marks a collective row when
 * it occurs anywhere in the row's ``args`` text (decode.comm_args searches that text).  Inside
 * a string token that text is either the whole token or, after an escaped quote, its end (a
 * quote inside a string is always escaped, so the marker's closing quote is the token's). */
#define WORD(w) {w, sizeof(w) - 1}
static const struct {
    const char *s;
    size_t n;
} MARKERS[] = {WORD("Collective name"), WORD("Comms Id"), WORD("In msg nelems"),
               WORD("Process Group Name"), WORD("Process Group ID")};

static int comm_markers(const unsigned char *s, size_t n) {
    unsigned char last = s[n - 1];
    if (last != 'e' && last != 'd' && last != 's' && last != 'D') return 0;
    for (int i = 0; i < 5; i++) {
        size_t m = MARKERS[i].n;
        if (n < m || memcmp(s + n - m, MARKERS[i].s, m) != 0) continue;
        if (n == m || s[n - m - 1] == '"') return 1;
    }
    return 0;
}

/* A string at p->s (the opening quote): validated and skipped.  *start, *len: its raw content;
 * *escaped: whether it holds a backslash.  Control characters, bad escapes, lone surrogates
 * and invalid UTF-8 decline. */
static inline __attribute__((always_inline)) int string(P *p, const unsigned char **start, size_t *len, int *escaped) {
    const unsigned char *s = p->s + 1, *end = p->end;
    int esc = 0;
    *start = s;
    for (;;) {
        /* eight bytes at a time up to the first quote, backslash, control or non-ASCII byte (the
         * lowest flagged byte is always a true one: borrows only flag the bytes above it) */
        while (end - s >= 8) {
            uint64_t w = load64(s);
            uint64_t quote = w ^ 0x2222222222222222ULL, slash = w ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t hit = (((quote - 0x0101010101010101ULL) & ~quote) |
                            ((slash - 0x0101010101010101ULL) & ~slash) |
                            (w - 0x2020202020202020ULL) | w) &
                           0x8080808080808080ULL;
            if (hit) {
                s += __builtin_ctzll(hit) >> 3;
                goto found;
            }
            s += 8;
        }
        while (s < end && *s >= 0x20 && *s != '"' && *s != '\\' && *s < 0x80) s++;
    found:
        if (s >= end) return -1;
        unsigned char c = *s;
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c == '\\') {
            esc = 1;
            if (end - s < 2) return -1;
            unsigned char e = s[1];
            if (e == 'u') {
                uint32_t u;
                if (end - s < 6 || hex4(s + 2, &u)) return -1;
                s += 6;
                if (u >= 0xD800 && u <= 0xDBFF) {
                    uint32_t lo;
                    if (end - s < 6 || s[0] != '\\' || s[1] != 'u' || hex4(s + 2, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF)
                        return -1;
                    s += 6;
                } else if (u >= 0xDC00 && u <= 0xDFFF) {
                    return -1;
                }
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                s += 2;
            } else {
                return -1;
            }
            continue;
        }
        int n = utf8_len(s, end); /* c >= 0x80 */
        if (!n) return -1;
        s += n;
    }
    *len = (size_t)(s - *start);
    *escaped = esc;
    p->s = s + 1;
    if (p->count_markers && *len >= 8) p->markers += comm_markers(*start, *len);
    return 0;
}

static void put_utf8(Buf *b, uint32_t cp) {
    unsigned char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    buf_put(b, o, n);
}

/* the decoded bytes of a validated string's raw content (escapes resolved) into b */
static int unescape(const unsigned char *s, size_t n, Buf *b) {
    const unsigned char *end = s + n;
    b->len = 0;
    if (buf_reserve(b, n)) return -1;
    while (s < end) {
        if (*s != '\\') {
            const unsigned char *q = s;
            while (q < end && *q != '\\') q++;
            buf_put(b, s, (size_t)(q - s));
            s = q;
            continue;
        }
        unsigned char e = s[1];
        if (e == 'u') {
            uint32_t u = 0, lo = 0;
            hex4(s + 2, &u);
            s += 6;
            if (u >= 0xD800 && u <= 0xDBFF) {
                hex4(s + 2, &lo);
                s += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(b, u);
            continue;
        }
        char c = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                 : e == 't' ? '\t' : (char)e;
        buf_put(b, &c, 1);
        s += 2;
    }
    return 0;
}

typedef struct {
    int is_int;          /* no fraction, no exponent */
    int neg;
    int overflow;        /* integer beyond int64 */
    int64_t ival;        /* the integer (is_int and !overflow) */
    uint64_t mant;       /* the significant digits of integer and fraction parts, as an integer */
    int sig;             /* how many (from the first non-zero digit); > 19: mant is not exact */
    const unsigned char *start, *end;
    const unsigned char *int_digits; /* first digit of the integer part */
    int n_int;
    const unsigned char *frac_digits;
    int n_frac;
    int has_exp;
    int exp;             /* the exponent's value (clamped) */
} Num;

/* A number at p->s, validated against JSON's grammar; its digits accumulated on the way. */
static inline __attribute__((always_inline)) int number(P *p, Num *n) {
    const unsigned char *s = p->s, *end = p->end;
    uint64_t m = 0;
    int sig = 0;
    n->neg = n->has_exp = n->exp = n->n_frac = 0;
    n->frac_digits = NULL;
    n->start = s;
    if (s < end && *s == '-') {
        n->neg = 1;
        s++;
    }
    if (s >= end || *s < '0' || *s > '9') return -1;
    n->int_digits = s;
    if (*s == '0') {
        s++;
    } else {
        while (s < end && *s >= '0' && *s <= '9') {
            if (++sig <= 19) m = m * 10 + (unsigned)(*s - '0');
            s++;
        }
    }
    n->n_int = (int)(s - n->int_digits);
    n->is_int = 1;
    if (s < end && *s == '.') {
        s++;
        n->frac_digits = s;
        while (s < end && *s >= '0' && *s <= '9') {
            if (sig || *s != '0') {
                if (++sig <= 19) m = m * 10 + (unsigned)(*s - '0');
            }
            s++;
        }
        n->n_frac = (int)(s - n->frac_digits);
        if (!n->n_frac) return -1;
        n->is_int = 0;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        int eneg = 0;
        if (s < end && (*s == '+' || *s == '-')) eneg = *s++ == '-';
        const unsigned char *d = s;
        int e = 0;
        while (s < end && *s >= '0' && *s <= '9') {
            if (e < 100000) e = e * 10 + (*s - '0');
            s++;
        }
        if (s == d) return -1;
        n->has_exp = 1;
        n->exp = eneg ? -e : e;
        n->is_int = 0;
    }
    n->end = s;
    n->mant = m;
    n->sig = sig;
    if (n->is_int) {
        /* the integer part has sig digits (no leading zero but "0" itself) */
        int over = sig > 19 || (n->neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX);
        n->overflow = over;
        n->ival = over ? 0 : n->neg ? (int64_t)(0 - m) : (int64_t)m;
    } else {
        n->overflow = 0;
        n->ival = 0;
    }
    p->s = s;
    return 0;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The number as the nearest double (what msgspec decodes); -1 when out of the double range or
 * an integer too large to convert here. */
static int to_double(const Num *n, double *out) {
    if (n->is_int) {
        if (n->overflow) return -1;
        *out = (double)n->ival;
        return 0;
    }
    /* the value is mant * 10**e10 when every significant digit is in mant */
    int e10 = (n->has_exp ? n->exp : 0) - n->n_frac;
    if (n->sig <= 19 && n->mant < (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        double v = (double)n->mant;
        v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
        *out = n->neg ? -v : v;
        return 0;
    }
    if (n->has_exp && (n->exp > 400 || n->exp < -400)) return -1;
    /* the C library's correctly rounded conversion, in the "C" locale (no GIL needed) */
    size_t len = (size_t)(n->end - n->start);
    char small[64], *text = small;
    if (len >= sizeof small) {
        text = (char *)PyMem_RawMalloc(len + 1);
        if (!text) return -1;
    }
    memcpy(text, n->start, len);
    text[len] = 0;
    char *stop;
    errno = 0;
    double v = strtod_l(text, &stop, C_LOCALE);
    int bad = stop != text + len || isinf(v) || (errno == ERANGE && v != 0.0);
    if (text != small) PyMem_RawFree(text);
    if (bad) return -1;
    *out = v;
    return 0;
}

static int skip_value(P *p);

/* at an object's or array's opening bracket: steps in (one level deeper); 1 when it closes at
 * once with *close* (stepped out again), 0 when members follow, -1 when nested too deep */
static inline int open_container(P *p, unsigned char close) {
    if (++p->depth > MAX_DEPTH) return -1;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        p->depth--;
        return 1;
    }
    return 0;
}

/* after a member: 0 at a comma (another member follows), 1 at the closing *close* (stepped
 * out), -1 otherwise */
static inline int next_member(P *p, unsigned char close) {
    ws(p);
    if (p->s >= p->end) return -1;
    if (*p->s == ',') {
        p->s++;
        return 0;
    }
    if (*p->s != close) return -1;
    p->s++;
    p->depth--;
    return 1;
}

static int skip_object(P *p) {
    int o = open_container(p, '}');
    if (o) return o < 0 ? -1 : 0;
    for (;;) {
        const unsigned char *k;
        size_t kl;
        int esc;
        ws(p);
        if (p->s >= p->end || *p->s != '"' || string(p, &k, &kl, &esc)) return -1;
        if (expect(p, ':') || skip_value(p)) return -1;
        if ((o = next_member(p, '}'))) return o < 0 ? -1 : 0;
    }
}

static int skip_array(P *p) {
    int o = open_container(p, ']');
    if (o) return o < 0 ? -1 : 0;
    for (;;) {
        if (skip_value(p)) return -1;
        if ((o = next_member(p, ']'))) return o < 0 ? -1 : 0;
    }
}

static int literal(P *p, const char *word, size_t n) {
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n) != 0) return -1;
    p->s += n;
    return 0;
}

/* any value, validated and skipped */
static int skip_value(P *p) {
    ws(p);
    if (p->s >= p->end) return -1;
    switch (*p->s) {
    case '{':
        return skip_object(p);
    case '[':
        return skip_array(p);
    case '"': {
        const unsigned char *s;
        size_t n;
        int esc;
        return string(p, &s, &n, &esc);
    }
    case 't':
        return literal(p, "true", 4);
    case 'f':
        return literal(p, "false", 5);
    case 'n':
        return literal(p, "null", 4);
    default: {
        Num num;
        return number(p, &num);
    }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* a decoded value of the fields the rows stage reads */

enum { V_MISSING, V_NULL, V_BOOL, V_INT, V_FLOAT, V_STR, V_OTHER };

typedef struct {
    int type;
    Num num;                  /* V_INT, V_FLOAT */
    const unsigned char *str; /* V_STR: raw content */
    size_t len;
    int escaped;
    const unsigned char *raw; /* the value's text */
    size_t raw_len;
} Val;

static inline __attribute__((always_inline)) int value(P *p, Val *v) {
    ws(p);
    if (p->s >= p->end) return -1;
    const unsigned char *start = p->s;
    unsigned char c = *p->s;
    int rc;
    if (c == '"') {
        v->type = V_STR;
        rc = string(p, &v->str, &v->len, &v->escaped);
    } else if (c == '{' || c == '[') {
        v->type = V_OTHER;
        rc = skip_value(p);
    } else if (c == 't' || c == 'f') {
        v->type = V_BOOL;
        rc = skip_value(p);
    } else if (c == 'n') {
        v->type = V_NULL;
        rc = literal(p, "null", 4);
    } else {
        rc = number(p, &v->num);
        v->type = v->num.is_int ? V_INT : V_FLOAT;
    }
    v->raw = start;
    v->raw_len = (size_t)(p->s - start);
    return rc;
}

/* columns.ints: an integer in int64, else -1 */
static inline int64_t as_int(const Val *v) {
    return v->type == V_INT && !v->num.overflow ? v->num.ival : -1;
}

/* columns.floats before its range: a number as a double, anything else NaN; -1 declines */
static int as_float(const Val *v, double *out) {
    if (v->type == V_INT || v->type == V_FLOAT) return to_double(&v->num, out);
    *out = NAN;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* times: columns.us_to_ns, both readings */

typedef struct {
    int64_t ns, dec_ns;
    unsigned char code, dec_code;
} Time;

typedef struct {
    int float_mode;   /* some value is not an integer: the float reading */
    double max;       /* largest value after the range check (float reading) */
    int any_frac;     /* some value is not integral (float reading) */
    int no_decimal;   /* some value has no decimal reading here (exponent, too many digits) */
} TimeCol;

/* the exact decimal reading: value * 1000 rounded half-even (decimal_us_to_ns) */
static int decimal_ns(const Num *n, int negative, int64_t *ns, unsigned char *code) {
    const unsigned char *ip = n->int_digits;
    int ni = n->n_int;
    while (ni > 1 && *ip == '0') {
        ip++;
        ni--;
    }
    int sig = ni + n->n_frac;
    if (n->has_exp || sig > 25) return -1;
    if (ni > 16) { /* beyond 10**16 us: out of range whatever the fraction */
        *ns = 0;
        *code = n->neg ? (unsigned char)negative : OUT_OF_RANGE;
        return 0;
    }
    int64_t x = 0;
    for (int i = 0; i < ni; i++) x = x * 10 + (ip[i] - '0');
    for (int i = 0; i < 3; i++) x = x * 10 + (i < n->n_frac ? n->frac_digits[i] - '0' : 0);
    if (n->n_frac > 3) {
        int first = n->frac_digits[3] - '0', rest = 0;
        for (int i = 4; i < n->n_frac; i++) rest |= n->frac_digits[i] != '0';
        if (first > 5 || (first == 5 && (rest || (x & 1)))) x++;
    }
    if (n->neg) x = -x;
    if (x < 0) {
        *ns = 0;
        *code = (unsigned char)negative;
    } else if (x > TIME_LIMIT_NS) {
        *ns = 0;
        *code = OUT_OF_RANGE;
    } else {
        *ns = x;
        *code = OK;
    }
    return 0;
}

static int time_value(const Val *v, int negative, Time *t, TimeCol *col) {
    if (v->type == V_INT) {
        unsigned char code = OK;
        int64_t ns = 0;
        if (v->num.overflow) code = v->num.neg ? (unsigned char)negative : OUT_OF_RANGE;
        else if (v->num.ival < 0) code = (unsigned char)negative;
        else if (v->num.ival > LIMIT_US) code = OUT_OF_RANGE;
        else ns = v->num.ival * 1000;
        t->ns = t->dec_ns = ns;
        t->code = t->dec_code = code;
        if (!code && (double)v->num.ival > col->max) col->max = (double)v->num.ival;
        return 0;
    }
    if (v->type != V_FLOAT) {
        col->float_mode = 1;
        t->ns = t->dec_ns = 0;
        t->code = t->dec_code = NOT_A_NUMBER;
        return 0;
    }
    col->float_mode = 1;
    double x;
    if (to_double(&v->num, &x)) return -1;
    if (!(x >= 0 && x <= (double)LIMIT_US)) {
        t->ns = 0;
        t->code = x < 0 ? (unsigned char)negative : OUT_OF_RANGE;
    } else {
        double whole = floor(x);
        if (x != whole) col->any_frac = 1;
        if (x > col->max) col->max = x;
        t->ns = (int64_t)whole * 1000 + (int64_t)rint((x - whole) * 1000.0);
        t->code = OK;
    }
    if (decimal_ns(&v->num, negative, &t->dec_ns, &t->dec_code)) col->no_decimal = 1;
    return 0;
}

/* whether the column takes the decimal reading (columns.InexactTimes) */
static int decimal_mode(const TimeCol *c) {
    return c->float_mode && c->max >= EXACT_FLOAT_LIMIT_US && c->any_frac;
}

/* ------------------------------------------------------------------------------------------ */
/* the rows */

/* collective metadata keys, in decode.COMM_KEYS order (index = position) */
static const char *COMM_KEYS[] = {
    "Collective name",   "In msg nelems",     "Out msg nelems",
    "Group size",        "dtype",             "In split size",
    "Out split size",    "Global rank start", "Global rank stride",
    "Process Group ID",  "Process Group Name", "Process Group Description",
    "Process Group Ranks", "Src Rank",        "Dst Rank",
    "Input Tensors start", "Output Tensors start", "Seq",
    "Comms Id",          "Rank"};
#define N_COMM 20
/* decode.COMM_MARKER_KEYS: Collective name, Comms Id, In msg nelems, Process Group Name/ID */
#define COMM_MARKERS ((1u << 0) | (1u << 18) | (1u << 1) | (1u << 10) | (1u << 9))

typedef struct {
    int64_t pos;
    int32_t name, cat;
    Time ts, dur;
    int64_t pid, tid;
    int64_t stream, correlation, external_id, external_id_2022;
    int64_t device; /* device_set: 0 missing/null (the pid then), 1 integer, 2 other */
    int device_set;
    int64_t grid[3], block[3];
    int64_t registers, shared_memory, bytes, wait_on_stream, wait_on_event;
    double occupancy, blocks_per_sm, warps_per_sm;
    int32_t kind, kernel;
    int32_t input_dims, input_types, concrete_inputs, input_strides;
    int32_t comm_hit; /* args text holds a collective marker key (COMM_MARKERS' text) */
} Row;

typedef struct {
    Intern names, cats, kinds, raws, meta_keys, meta_strs;
    Buf rows;  /* Row */
    Buf comms; /* CommRec */
    Buf metas; /* MetaRec, one per distinct key */
    Buf mems;  /* MemRec: the [memory] samples */
    Buf scratch;
    TimeCol ts_col, dur_col, mem_col;
    int64_t n_events;
    const unsigned char *base;
} Scan;

typedef struct {
    int64_t row;
    int32_t key;
    size_t start, len; /* offset into the buffer */
} CommRec;

typedef struct {
    int32_t name;         /* 0 process_name, 1 thread_name, 2 process_labels */
    int pid_type, tid_type; /* V_INT, V_STR (meta_strs id in ival), V_NULL */
    int64_t pid, tid;
    size_t args_start, args_len; /* offset into the buffer; len 0: no args */
} MetaRec;

/* How each known key of an X event's args is read, and where into the row */
enum { A_INT, A_FLOAT, A_TRIPLE, A_NAME, A_KIND, A_RAW, A_DEVICE, A_COMM };

typedef struct {
    const char *key;
    size_t n;
    int kind;
    size_t at; /* offset of the Row field; A_COMM: index in COMM_KEYS */
} ArgField;

#define ARG(key, kind, field) {key, sizeof(key) - 1, kind, offsetof(Row, field)}

static const ArgField ARG_FIELDS[] = {
    ARG("stream", A_INT, stream),
    ARG("correlation", A_INT, correlation),
    ARG("External id", A_INT, external_id),
    ARG("external id", A_INT, external_id_2022),
    ARG("Input Dims", A_RAW, input_dims),
    ARG("Input type", A_RAW, input_types),
    ARG("Concrete Inputs", A_RAW, concrete_inputs),
    ARG("Input Strides", A_RAW, input_strides),
    ARG("device", A_DEVICE, device),
    ARG("grid", A_TRIPLE, grid),
    ARG("block", A_TRIPLE, block),
    ARG("registers per thread", A_INT, registers),
    ARG("shared memory", A_INT, shared_memory),
    ARG("bytes", A_INT, bytes),
    ARG("est. achieved occupancy %", A_FLOAT, occupancy),
    ARG("blocks per SM", A_FLOAT, blocks_per_sm),
    ARG("warps per SM", A_FLOAT, warps_per_sm),
    ARG("kind", A_KIND, kind),
    ARG("kernel", A_NAME, kernel),
    ARG("wait_on_stream", A_INT, wait_on_stream),
    ARG("wait_on_cuda_event_record_corr_id", A_INT, wait_on_event),
};
#define N_ARG_FIELDS (sizeof ARG_FIELDS / sizeof ARG_FIELDS[0])

static ArgField COMM_FIELDS[N_COMM]; /* the collective keys as A_COMM fields (module load) */

#define MAX_KEY 40
static const ArgField *BY_LENGTH[MAX_KEY][8]; /* the fields whose key has each length */

/* the field of the args key k[0..n), or NULL for a key the rows stage does not read */
static inline const ArgField *arg_field(const unsigned char *k, size_t n) {
    if (n >= MAX_KEY) return NULL;
    for (const ArgField *const *f = BY_LENGTH[n]; *f; f++)
        if (memcmp(k, (*f)->key, n) == 0) return *f;
    return NULL;
}

/* BY_LENGTH from ARG_FIELDS and the collective keys; -1 when a length has too many keys */
static int index_arg_fields(void) {
    for (int i = 0; i < N_COMM; i++) {
        COMM_FIELDS[i] = (ArgField){COMM_KEYS[i], strlen(COMM_KEYS[i]), A_COMM, (size_t)i};
    }
    const ArgField *all[N_ARG_FIELDS + N_COMM];
    for (size_t i = 0; i < N_ARG_FIELDS; i++) all[i] = &ARG_FIELDS[i];
    for (int i = 0; i < N_COMM; i++) all[N_ARG_FIELDS + i] = &COMM_FIELDS[i];
    for (size_t i = 0; i < N_ARG_FIELDS + N_COMM; i++) {
        size_t n = all[i]->n, j = 0;
        if (n >= MAX_KEY) return -1;
        while (BY_LENGTH[n][j]) j++;
        if (j + 1 >= sizeof BY_LENGTH[n] / sizeof BY_LENGTH[n][0]) return -1;
        BY_LENGTH[n][j] = all[i];
    }
    return 0;
}

static void row_defaults(Row *r) {
    memset(r, 0, sizeof *r);
    r->name = r->cat = -1;
    r->stream = r->correlation = r->external_id = r->external_id_2022 = -1;
    r->device = -1;
    r->device_set = 0;
    for (int i = 0; i < 3; i++) r->grid[i] = r->block[i] = -1;
    r->registers = r->shared_memory = r->bytes = r->wait_on_stream = r->wait_on_event = -1;
    r->occupancy = r->blocks_per_sm = r->warps_per_sm = NAN;
    r->kind = r->kernel = -1;
    r->input_dims = r->input_types = r->concrete_inputs = r->input_strides = -1;
}

/* drop the collective records of the row being built (rows are committed in order: records of
 * a row index at or beyond the committed rows belong to no row yet) */
static void trim_comms(Scan *sc) {
    int64_t n_rows = (int64_t)(sc->rows.len / sizeof(Row));
    while (sc->comms.len >= sizeof(CommRec) &&
           ((CommRec *)(sc->comms.data + sc->comms.len - sizeof(CommRec)))->row >= n_rows)
        sc->comms.len -= sizeof(CommRec);
}

static int x_args_fields(Scan *sc, P *p, Row *r);

/* one sample of a ``[memory]`` event (columns.counter_rows): Total Allocated (label 0) or Total
 * Reserved (label 1) on the event's Device Id */
typedef struct {
    Time ts;
    double value;
    int64_t device;
    uint8_t label;
} MemRec;

static int32_t intern_str(Scan *sc, Intern *t, const Val *v) {
    if (!v->escaped) return intern(t, v->str, v->len);
    if (unescape(v->str, v->len, &sc->scratch)) return -1;
    return intern(t, (const unsigned char *)sc->scratch.data, sc->scratch.len);
}

/* whether the key k[0..n) is the string literal word */
#define key_is(k, n, word) ((n) == sizeof(word) - 1 && memcmp((k), (word), sizeof(word) - 1) == 0)

/* grid/block: [x, y, z] of non-negative integers below 2**63, else -1s (columns.triples).  A
 * boolean in a list declines: numpy reads it as 0/1 when the chunk's lists make an int array. */
static int triple(P *p, int64_t out[3]) {
    out[0] = out[1] = out[2] = -1;
    ws(p);
    if (p->s >= p->end) return -1;
    if (*p->s != '[') return skip_value(p);
    int64_t got[3];
    int n = 0, ok = 1;
    int o = open_container(p, ']');
    if (o) return o < 0 ? -1 : 0;
    do {
        Val v;
        if (value(p, &v) || v.type == V_BOOL) return -1;
        if (v.type != V_INT || v.num.overflow || v.num.ival < 0) ok = 0;
        else if (n < 3) got[n] = v.num.ival;
        n++;
    } while (!(o = next_member(p, ']')));
    if (o < 0) return -1;
    if (ok && n == 3) memcpy(out, got, sizeof got);
    return 0;
}

/* the args of an X event into *r (defaults first: a later args key replaces an earlier one,
 * and so do the collective records of the row being built) */
static int x_args(Scan *sc, P *p, Row *r) {
    p->count_markers = 1;
    p->markers = 0;
    int rc = x_args_fields(sc, p, r);
    p->count_markers = 0;
    r->comm_hit = p->markers > 0;
    return rc;
}

static int x_args_fields(Scan *sc, P *p, Row *r) {
    row_defaults(r);
    trim_comms(sc);
    ws(p);
    if (p->s >= p->end || *p->s != '{') return -1;
    int o = open_container(p, '}');
    if (o) return o < 0 ? -1 : 0;
    for (;;) {
        const unsigned char *k;
        size_t kl;
        int esc;
        ws(p);
        if (p->s >= p->end || *p->s != '"' || string(p, &k, &kl, &esc)) return -1;
        if (esc) return -1;
        for (size_t i = 0; i < kl; i++)
            if (k[i] >= 0x80) return -1;
        if (expect(p, ':')) return -1;
        const ArgField *f = arg_field(k, kl);
        char *at = f ? (char *)r + f->at : NULL;
        Val v;
        if (!f) {
            if (skip_value(p)) return -1;
        } else if (f->kind == A_TRIPLE) {
            if (triple(p, (int64_t *)at)) return -1;
        } else if (value(p, &v)) {
            return -1;
        } else if (f->kind == A_INT) {
            *(int64_t *)at = as_int(&v);
        } else if (f->kind == A_FLOAT) {
            if (as_float(&v, (double *)at)) return -1;
        } else if (f->kind == A_NAME || f->kind == A_KIND) {
            Intern *table = f->kind == A_NAME ? &sc->names : &sc->kinds;
            int32_t id = v.type == V_STR ? intern_str(sc, table, &v) : -1;
            if (v.type == V_STR && id < 0) return -1;
            *(int32_t *)at = id;
        } else if (f->kind == A_RAW) {
            if ((*(int32_t *)at = intern(&sc->raws, v.raw, v.raw_len)) < 0) return -1;
        } else if (f->kind == A_DEVICE) {
            r->device_set = v.type == V_MISSING || v.type == V_NULL ? 0
                            : v.type == V_INT && !v.num.overflow ? 1 : 2;
            r->device = r->device_set == 1 ? v.num.ival : -1;
        } else { /* A_COMM: at is the key's index in COMM_KEYS */
            CommRec c = {(int64_t)(sc->rows.len / sizeof(Row)), (int32_t)f->at,
                         (size_t)(v.raw - sc->base), v.raw_len};
            if (buf_put(&sc->comms, &c, sizeof c)) return -1;
        }
        if ((o = next_member(p, '}'))) return o < 0 ? -1 : 0;
    }
}

static const char *META_NAMES[] = {"process_name", "thread_name", "process_labels"};

/* decode.SKIPPED_PHASES */
static const char SKIPPED_PHASES[] = "BEbnestfPONDVvRc()STpF";

static int meta_part(Scan *sc, const Val *v, int *type, int64_t *out) {
    if (v->type == V_MISSING || v->type == V_NULL) {
        *type = V_NULL;
        *out = 0;
        return 0;
    }
    if (v->type == V_INT && !v->num.overflow) {
        *type = V_INT;
        *out = v->num.ival;
        return 0;
    }
    if (v->type == V_STR && !v->escaped) {
        *type = V_STR;
        int32_t id = intern(&sc->meta_strs, v->str, v->len);
        *out = id;
        return id < 0 ? -1 : 0;
    }
    return -1; /* floats, booleans, lists...: Python's dict keys decide */
}

/* an M event of a kept name: its (name, pid, tid) key's record, args replaced by the last */
static int add_meta(Scan *sc, int name, const Val *pid, const Val *tid, const Val *args) {
    MetaRec m;
    m.name = name;
    if (meta_part(sc, pid, &m.pid_type, &m.pid) || meta_part(sc, tid, &m.tid_type, &m.tid))
        return -1;
    m.args_start = args->type == V_MISSING ? 0 : (size_t)(args->raw - sc->base);
    m.args_len = args->type == V_MISSING ? 0 : args->raw_len;
    int64_t key[5] = {m.name, m.pid_type, m.pid, m.tid_type, m.tid};
    size_t before = sc->meta_keys.n;
    int32_t id = intern(&sc->meta_keys, (const unsigned char *)key, sizeof key);
    if (id < 0) return -1;
    if ((size_t)id == before) return buf_put(&sc->metas, &m, sizeof m);
    MetaRec *old = (MetaRec *)sc->metas.data + id;
    old->args_start = m.args_start;
    old->args_len = m.args_len;
    return 0;
}

/* columns._finite: a number (not a boolean) that a double holds, as that double; 0 when not a
 * number, -1 to decline (an integer beyond int64, a float beyond the double range) */
static int finite_number(const Val *v, double *out) {
    if (v->type == V_INT) {
        if (v->num.overflow) return -1;
        *out = (double)v->num.ival;
        return 1;
    }
    if (v->type == V_FLOAT) return to_double(&v->num, out) ? -1 : 1;
    return 0;
}

/* the samples of a ``[memory]`` instant event (args: the raw object, or missing) */
static int memory_samples(Scan *sc, const P *p, const Val *ts, const Val *args) {
    Val got[3]; /* Total Allocated, Total Reserved, Device Id */
    got[0].type = got[1].type = got[2].type = V_MISSING;
    if (args->type != V_MISSING) {
        P q = {args->raw, args->raw + args->raw_len, p->base, p->depth, 0, 0};
        q.s++; /* { (checked by the caller) */
        ws(&q);
        if (q.s < q.end && *q.s == '}') goto samples;
        for (;;) {
            const unsigned char *k;
            size_t kl;
            int esc;
            ws(&q);
            if (q.s >= q.end || *q.s != '"' || string(&q, &k, &kl, &esc) || esc) return -1;
            if (expect(&q, ':')) return -1;
            int which = key_is(k, kl, "Total Allocated")  ? 0
                        : key_is(k, kl, "Total Reserved") ? 1
                        : key_is(k, kl, "Device Id")      ? 2
                                                          : -1;
            if (which >= 0 ? value(&q, &got[which]) : skip_value(&q)) return -1;
            ws(&q);
            if (q.s < q.end && *q.s == ',') {
                q.s++;
                continue;
            }
            break;
        }
    }
samples:;
    int64_t device = as_int(&got[2]); /* -1: none, not an integer, beyond int64 */
    for (int label = 0; label < 2; label++) {
        MemRec m;
        int is = finite_number(&got[label], &m.value);
        if (is < 0) return -1;
        if (!is) continue;
        m.device = device;
        m.label = (uint8_t)label;
        if (time_value(ts, OUT_OF_RANGE, &m.ts, &sc->mem_col) || buf_put(&sc->mems, &m, sizeof m))
            return -1;
    }
    return 0;
}

/* The event-level keys Kineto writes on every event, matched on their raw bytes with the
 * closing quote (so nothing else can match): the key's length, p->s moved past it; 0 for any
 * other key (then read by string()). */
#define B3(a, b, c) ((uint64_t)(a) | (uint64_t)(b) << 8 | (uint64_t)(c) << 16)
#define B4(a, b, c, d) (B3(a, b, c) | (uint64_t)(d) << 24)
#define B5(a, b, c, d, e) (B4(a, b, c, d) | (uint64_t)(e) << 32)

static inline size_t event_key(P *p) {
    if (p->end - p->s < 9) return 0;
    uint64_t w = load64(p->s + 1);
    uint64_t w3 = w & 0xFFFFFFULL, w4 = w & 0xFFFFFFFFULL, w5 = w & 0xFFFFFFFFFFULL;
    size_t n = 0;
    if (w3 == B3('p', 'h', '"') || w3 == B3('t', 's', '"')) n = 2;
    else if (w4 == B4('c', 'a', 't', '"') || w4 == B4('d', 'u', 'r', '"') ||
             w4 == B4('p', 'i', 'd', '"') || w4 == B4('t', 'i', 'd', '"'))
        n = 3;
    else if (w5 == B5('n', 'a', 'm', 'e', '"') || w5 == B5('a', 'r', 'g', 's', '"'))
        n = 4;
    if (n) p->s += n + 2;
    return n;
}

/* whether a validated string's decoded text is *word* */
static int str_is(Scan *sc, const Val *v, const char *word) {
    size_t n = strlen(word);
    if (!v->escaped) return v->len == n && memcmp(v->str, word, n) == 0;
    if (unescape(v->str, v->len, &sc->scratch)) return -1;
    return sc->scratch.len == n && memcmp(sc->scratch.data, word, n) == 0;
}

/* one event object at p->s: an X candidate becomes a row, a kept M event a meta record */
static int event(Scan *sc, P *p) {
    ws(p);
    if (p->s >= p->end || *p->s != '{') return -1;
    if (++p->depth > MAX_DEPTH) return -1;
    p->s++;
    Row r; /* filled by x_args (its defaults first), or row_defaults when there are no args */
    Val ph, name, cat, ts, dur, pid, tid, args; /* only .type until a value is read */
    ph.type = name.type = cat.type = ts.type = dur.type = pid.type = tid.type = args.type =
        V_MISSING;
    int args_in_row = 0; /* the X args are parsed into r (ph came first, as Kineto writes it) */
    char phase = 0;
    for (;;) {
        const unsigned char *k;
        size_t kl;
        int esc;
        ws(p);
        if (p->s >= p->end || *p->s != '"') return -1;
        k = p->s + 1;
        if (!(kl = event_key(p))) {
            if (string(p, &k, &kl, &esc) || esc) return -1;
            for (size_t i = 0; i < kl; i++)
                if (k[i] >= 0x80) return -1;
        }
        if (expect(p, ':')) return -1;
        Val *dst = NULL;
        if (kl == 2 && k[0] == 'p' && k[1] == 'h') {
            if (ph.type != V_MISSING || value(p, &ph)) return -1; /* a second tag declines */
            if (ph.type != V_STR || ph.len != 1 || ph.escaped) return -1;
            phase = (char)ph.str[0];
            goto next;
        }
        if (kl == 2 && k[0] == 't' && k[1] == 's') dst = &ts;
        else if (key_is(k, kl, "cat")) dst = &cat;
        else if (key_is(k, kl, "dur")) dst = &dur;
        else if (key_is(k, kl, "pid")) dst = &pid;
        else if (key_is(k, kl, "tid")) dst = &tid;
        else if (key_is(k, kl, "name")) dst = &name;
        else if (key_is(k, kl, "args")) {
            if (phase == 'X') {
                ws(p);
                const unsigned char *start = p->s;
                if (x_args(sc, p, &r)) return -1;
                args.type = V_OTHER;
                args.raw = start;
                args.raw_len = (size_t)(p->s - start);
                args_in_row = 1;
                goto next;
            }
            dst = &args;
            args_in_row = 0;
        }
        if (dst ? value(p, dst) : skip_value(p)) return -1;
    next:;
        int o = next_member(p, '}');
        if (o < 0) return -1;
        if (o) break;
    }
    int64_t pos = sc->n_events++;
    int is;
    switch (phase) {
    case 'X':
        if (args.type == V_MISSING) {
            row_defaults(&r);
        } else if (!args_in_row) { /* args came before ph: parse them now */
            P q = {args.raw, args.raw + args.raw_len, p->base, p->depth, 0, 0};
            if (x_args(sc, &q, &r)) return -1;
        }
        if (cat.type != V_STR) return 0; /* not an activity row */
        if ((is = str_is(sc, &cat, "Trace")) != 0) return is < 0 ? -1 : 0;
        r.pos = pos;
        if ((r.cat = intern_str(sc, &sc->cats, &cat)) < 0) return -1;
        if (name.type == V_STR && (r.name = intern_str(sc, &sc->names, &name)) < 0) return -1;
        if (time_value(&ts, OUT_OF_RANGE, &r.ts, &sc->ts_col) ||
            time_value(&dur, NEGATIVE_DUR, &r.dur, &sc->dur_col))
            return -1;
        r.pid = as_int(&pid);
        r.tid = as_int(&tid);
        if (r.device_set == 0) r.device = r.pid; /* rows._devices: no device, the pid */
        return buf_put(&sc->rows, &r, sizeof r);
    case 'M':
        if (name.type != V_STR) return 0;
        for (int i = 0; i < 3; i++) {
            if ((is = str_is(sc, &name, META_NAMES[i])) < 0) return -1;
            if (is) return add_meta(sc, i, &pid, &tid, &args);
        }
        return 0;
    case 'i':
    case 'I':
        if (args.type != V_MISSING && args.raw[0] != '{') return -1;
        if (name.type != V_STR) return 0;
        if ((is = str_is(sc, &name, "[memory]")) <= 0) return is;
        return memory_samples(sc, p, &ts, &args);
    case 'C':
        return -1; /* counters: the Python path */
    default:
        return phase && strchr(SKIPPED_PHASES, phase) ? 0 : -1;
    }
}

static int events(Scan *sc, P *p, int tail) {
    ws(p);
    if (tail && p->s < p->end && *p->s == ']') {
        p->s++;
        return 0;
    }
    for (;;) {
        if (event(sc, p)) return -1;
        trim_comms(sc); /* records of an event that made no row */
        ws(p);
        if (p->s >= p->end) return tail ? -1 : 0;
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        if (tail && *p->s == ']') {
            p->s++;
            return 0;
        }
        return -1;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the result */

/* one column of *count* records (*rec_t* at *base*, each seen as *var* in *expr*) as a
   bytearray (numpy reads it without a copy), set as *name* in the dict `cols` */
#define FILL_COLUMN(name, type, count, rec_t, var, base, expr)                                 \
    do {                                                                                       \
        PyObject *ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(count * sizeof(type))); \
        if (!ba) goto fail;                                                                    \
        type *col = (type *)PyByteArray_AS_STRING(ba);                                         \
        for (size_t i = 0; i < count; i++) {                                                   \
            const rec_t *var = base + i;                                                       \
            col[i] = (type)(expr);                                                             \
        }                                                                                      \
        int e = PyDict_SetItemString(cols, name, ba);                                          \
        Py_DECREF(ba);                                                                         \
        if (e) goto fail;                                                                      \
    } while (0)

/* a column of the rows (`r`), and of the memory samples (`m`) */
#define COLUMN(name, type, expr) FILL_COLUMN(name, type, n, Row, r, rows, expr)
#define MEM_COLUMN(name, type, expr) FILL_COLUMN(name, type, nm, MemRec, m, mems, expr)

static PyObject *meta_list(Scan *sc) {
    PyObject *strs = intern_list(&sc->meta_strs, 1);
    if (!strs) return NULL;
    size_t nm = sc->metas.len / sizeof(MetaRec);
    PyObject *metas = PyList_New((Py_ssize_t)nm);
    for (size_t i = 0; metas && i < nm; i++) {
        const MetaRec *m = (const MetaRec *)sc->metas.data + i;
        int types[2] = {m->pid_type, m->tid_type};
        int64_t vals[2] = {m->pid, m->tid};
        PyObject *part[2];
        for (int j = 0; j < 2; j++) {
            if (types[j] == V_INT) {
                part[j] = PyLong_FromLongLong(vals[j]);
            } else {
                part[j] = types[j] == V_STR ? PyList_GET_ITEM(strs, vals[j]) : Py_None;
                Py_INCREF(part[j]);
            }
        }
        PyObject *t = part[0] && part[1]
                          ? Py_BuildValue("(sOOy#)", META_NAMES[m->name], part[0], part[1],
                                          (const char *)sc->base + m->args_start,
                                          (Py_ssize_t)m->args_len)
                          : NULL;
        Py_XDECREF(part[0]);
        Py_XDECREF(part[1]);
        if (!t) {
            Py_CLEAR(metas);
            break;
        }
        PyList_SET_ITEM(metas, (Py_ssize_t)i, t);
    }
    Py_DECREF(strs);
    return metas;
}

static PyObject *comm_list(Scan *sc) {
    size_t nc = sc->comms.len / sizeof(CommRec);
    PyObject *comms = PyList_New((Py_ssize_t)nc);
    for (size_t i = 0; comms && i < nc; i++) {
        const CommRec *c = (const CommRec *)sc->comms.data + i;
        PyObject *t = Py_BuildValue("(Liy#)", (long long)c->row, (int)c->key,
                                    (const char *)sc->base + c->start, (Py_ssize_t)c->len);
        if (!t) {
            Py_CLEAR(comms);
            break;
        }
        PyList_SET_ITEM(comms, (Py_ssize_t)i, t);
    }
    return comms;
}

/* the tuple described at the top of this file; None when a time column needs the decimal
 * reading that a value here has not */
static PyObject *result(Scan *sc, size_t end_offset) {
    const Row *rows = (const Row *)sc->rows.data;
    size_t n = sc->rows.len / sizeof(Row);
    int ts_dec = decimal_mode(&sc->ts_col), dur_dec = decimal_mode(&sc->dur_col);
    int mem_dec = decimal_mode(&sc->mem_col);
    if ((ts_dec && sc->ts_col.no_decimal) || (dur_dec && sc->dur_col.no_decimal) ||
        (mem_dec && sc->mem_col.no_decimal)) {
        Py_RETURN_NONE;
    }
    PyObject *cols = PyDict_New(), *lists[7] = {NULL};
    if (!cols) return NULL;
    COLUMN("event_index", int64_t, r->pos);
    COLUMN("name", int32_t, r->name);
    COLUMN("cat", int32_t, r->cat);
    COLUMN("ts", int64_t, ts_dec ? r->ts.dec_ns : r->ts.ns);
    COLUMN("ts_bad", uint8_t, ts_dec ? r->ts.dec_code : r->ts.code);
    COLUMN("dur", int64_t, dur_dec ? r->dur.dec_ns : r->dur.ns);
    COLUMN("dur_bad", uint8_t, dur_dec ? r->dur.dec_code : r->dur.code);
    COLUMN("pid", int64_t, r->pid);
    COLUMN("tid", int64_t, r->tid);
    COLUMN("stream", int64_t, r->stream);
    COLUMN("correlation", int64_t, r->correlation);
    COLUMN("external_id", int64_t, r->external_id);
    COLUMN("external_id_2022", int64_t, r->external_id_2022);
    COLUMN("device", int64_t, r->device);
    COLUMN("grid_x", int64_t, r->grid[0]);
    COLUMN("grid_y", int64_t, r->grid[1]);
    COLUMN("grid_z", int64_t, r->grid[2]);
    COLUMN("block_x", int64_t, r->block[0]);
    COLUMN("block_y", int64_t, r->block[1]);
    COLUMN("block_z", int64_t, r->block[2]);
    COLUMN("registers", int64_t, r->registers);
    COLUMN("shared_memory", int64_t, r->shared_memory);
    COLUMN("bytes", int64_t, r->bytes);
    COLUMN("wait_on_stream", int64_t, r->wait_on_stream);
    COLUMN("wait_on_event", int64_t, r->wait_on_event);
    COLUMN("occupancy", double, r->occupancy);
    COLUMN("blocks_per_sm", double, r->blocks_per_sm);
    COLUMN("warps_per_sm", double, r->warps_per_sm);
    COLUMN("kind", int32_t, r->kind);
    COLUMN("kernel", int32_t, r->kernel);
    COLUMN("input_dims", int32_t, r->input_dims);
    COLUMN("input_types", int32_t, r->input_types);
    COLUMN("concrete_inputs", int32_t, r->concrete_inputs);
    COLUMN("input_strides", int32_t, r->input_strides);
    COLUMN("comm_hit", uint8_t, r->comm_hit);
    {
        const MemRec *mems = (const MemRec *)sc->mems.data;
        size_t nm = sc->mems.len / sizeof(MemRec);
        MEM_COLUMN("mem_ts", int64_t, mem_dec ? m->ts.dec_ns : m->ts.ns);
        MEM_COLUMN("mem_ts_bad", uint8_t, mem_dec ? m->ts.dec_code : m->ts.code);
        MEM_COLUMN("mem_value", double, m->value);
        MEM_COLUMN("mem_device", int64_t, m->device);
        MEM_COLUMN("mem_label", uint8_t, m->label);
    }
    if (!(lists[0] = intern_list(&sc->names, 1)) || !(lists[1] = intern_list(&sc->cats, 1)) ||
        !(lists[2] = intern_list(&sc->kinds, 1)) || !(lists[3] = intern_list(&sc->raws, 0)) ||
        !(lists[4] = comm_list(sc)) || !(lists[5] = meta_list(sc)))
        goto fail;
    return Py_BuildValue("(LnNNNNNNN)", (long long)sc->n_events, (Py_ssize_t)end_offset,
                         lists[0], lists[1], lists[2], lists[3], cols, lists[4], lists[5]);
fail:
    Py_XDECREF(cols);
    for (int i = 0; i < 7; i++) Py_XDECREF(lists[i]);
    return NULL;
}

static void scan_free(Scan *sc) {
    intern_free(&sc->names);
    intern_free(&sc->cats);
    intern_free(&sc->kinds);
    intern_free(&sc->raws);
    intern_free(&sc->meta_keys);
    intern_free(&sc->meta_strs);
    buf_free(&sc->rows);
    buf_free(&sc->comms);
    buf_free(&sc->metas);
    buf_free(&sc->mems);
    buf_free(&sc->scratch);
}

PyDoc_STRVAR(scan_doc,
             "scan(buffer, start, stop, tail) -> tuple | None\n\n"
             "The events of buffer[start:stop]: comma-separated event objects (tail: up to and "
             "including the array's closing ']').  None when the scanner declines the chunk "
             "(the msgspec path then reads it).  See the module's C source for the result.");

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, stop;
    int tail;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnp", &view, &start, &stop, &tail)) return NULL;
    if (start < 0 || stop > view.len || start > stop) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start/stop outside the buffer");
        return NULL;
    }
    Scan sc;
    memset(&sc, 0, sizeof sc);
    sc.base = (const unsigned char *)view.buf;
    P p = {sc.base + start, sc.base + stop, sc.base, 0, 0, 0};
    PyObject *out = NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS /* the parse touches no Python object: other threads run meanwhile */
    ok = events(&sc, &p, tail) == 0;
    if (ok && !tail) {
        ws(&p);
        ok = p.s == p.end;
    }
    Py_END_ALLOW_THREADS
    if (ok) out = result(&sc, (size_t)(p.s - sc.base));
    scan_free(&sc);
    PyBuffer_Release(&view);
    if (!ok) {
        PyErr_Clear(); /* a declined chunk is no error */
        Py_RETURN_NONE;
    }
    return out;
}

static PyMethodDef methods[] = {{"scan", scan, METH_VARARGS, scan_doc}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "_scan",
                                    "Kineto traceEvents chunks scanned into columns.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__scan(void) {
    if (index_arg_fields()) {
        PyErr_SetString(PyExc_RuntimeError, "_scan: the args key table does not fit");
        return NULL;
    }
    C_LOCALE = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!C_LOCALE) return PyErr_NoMemory();
    return PyModule_Create(&module);
}
