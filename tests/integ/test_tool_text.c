/*
 * tests/integ/test_tool_text.c — text that comes from a segment reaching a
 * terminal or a JSON consumer: a crafted segment (this test process is its
 * writer, so it is live) whose command line and policy hold escape
 * sequences that would retitle and clear a terminal, raw C1 bytes, bytes
 * that are not UTF-8, a C1 character in valid UTF-8, DEL, tab, newline and
 * a backslash. The process is also a member of a group, so the group
 * section prints its command too. Every text output of `gpumem ps`,
 * `gpumem log`, `gpumem-top --once` and the interactive `gpumem-top` (in
 * tmux, when installed) must carry no control byte but newline, only valid
 * UTF-8 and no C1 character, and show the bytes in the documented form
 * (\xHH, a backslash doubled); every JSON output (ps --json, top --json,
 * log --format jsonl) must be valid JSON in valid UTF-8. Also: the text
 * form of `gpumem log` prints a host (pinned memory) event's fields with
 * their meaning (signed delta, host address, pinned total) and a gap of
 * one event in the singular, and every form prints an event kind and API
 * it does not know by number.
 *
 * Segment prefixes are "gmtx<runner pid>_<n>"; the unchecked teardown (in
 * the runner, so it runs even when a case fails) removes every file of
 * them. BUILD (default "build") names the build directory.
 */
#include <check.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "shim/group/group.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

#define OUT_CAP (1 << 20)
#define MiB (1ull << 20)
#define HOST_ADDR 0x7f0000001000ull

/* The crafted command line: OSC retitle + BEL, clear screen, a raw CSI
 * (0x9b), bytes that are no UTF-8, valid UTF-8, a C1 character in valid
 * UTF-8 (U+009B), DEL, tab, newline, a backslash, an overlong '/', a
 * surrogate and a sequence cut short at the end. */
static const char HOSTILE_CMD[] =
    "evil \033]0;pwned\007\033[2J c1=\x9b" "31m bad=\xff\xfe caf\xc3\xa9 "
    "enc=\xc2\x9b" "1m del=\x7f tab=\t nl=\n back=\\ over=\xc0\xaf "
    "sur=\xed\xa0\x80 cut=\xe2\x82";
static const char HOSTILE_POLICY[] = "limit=2.0GiB \033[31mred\033[0m \xff";

/* How they must look in text and in JSON. */
static const char TERM_CMD[] = "evil \\x1b]0;pwned\\x07\\x1b[2J c1=\\x9b31m";
static const char TERM_REST[] = " bad=\\xff\\xfe caf\xc3\xa9 enc=\\xc2\\x9b1m "
    "del=\\x7f tab=\\x09 nl=\\x0a back=\\\\ over=\\xc0\\xaf "
    "sur=\\xed\\xa0\\x80 cut=\\xe2\\x82";
static const char TERM_POLICY[] = "limit=2.0GiB \\x1b[31mred\\x1b[0m \\xff";
static const char JSON_CMD[] =
    "\"evil \\u001b]0;pwned\\u0007\\u001b[2J c1=\\ufffd31m bad=\\ufffd\\ufffd"
    " caf\xc3\xa9 enc=\\u009b1m del=\\u007f tab=\\t nl=\\n back=\\\\ "
    "over=\\ufffd\\ufffd sur=\\ufffd\\ufffd\\ufffd cut=\\ufffd\\ufffd\"";

static char out[OUT_CAP];
static char prefix[64];
static char prefix_env[96];
static int runner_pid;

static const char *gpumem(void) { return gm_bpath("gpumem"); }
static const char *top(void) { return gm_bpath("gpumem-top"); }

static void new_prefix(void)
{
    static int n;
    snprintf(prefix, sizeof prefix, "gmtx%d_%d", runner_pid, n++);
    snprintf(prefix_env, sizeof prefix_env, "GPUMEM_SHM_PREFIX=%s", prefix);
}

/* Unchecked teardown: every /dev/shm file of this runner's prefixes. */
static void remove_all(void)
{
    char lead[32];
    int n = snprintf(lead, sizeof lead, "gmtx%d_", runner_pid);
    DIR *d = opendir(GM_READER_DEFAULT_DIR);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, lead, (size_t)n) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", GM_READER_DEFAULT_DIR,
                 e->d_name);
        unlink(path);
    }
    closedir(d);
}

static int tool(const char *const *argv)
{
    const char *env[] = { prefix_env, NULL };
    return gm_run(env, 0, argv, out, OUT_CAP);
}

/* ---- the crafted segment ------------------------------------------------------ */

static struct gm_tel tel;
static struct gm_group grp;
static char spid[16];

static void set_text(char *field, size_t cap, const char *s)
{
    memset(field, 0, cap);
    memcpy(field, s, strlen(s));
}

/* This process's segment under a fresh prefix, with the hostile text, one
 * allocation, a pinned host allocation and its release; and a membership
 * of group "tt" with a charge. */
static void craft(void)
{
    static const unsigned char uuid[16] = { 0xab, 0xcd, 0x01, 0x02 };
    new_prefix();
    struct gm_tel_params p = { .prefix = prefix, .ring_events = 64,
                               .dev_slots = 2, .policy_summary = "x" };
    char err[256] = "";
    ck_assert_msg(gm_tel_open(&tel, &p, err, sizeof err) == 0, "%s", err);
    set_text(tel.hdr->cmdline, sizeof tel.hdr->cmdline, HOSTILE_CMD);
    set_text(tel.hdr->policy, sizeof tel.hdr->policy, HOSTILE_POLICY);
    gm_tel_device(&tel, 0, 80ull << 30, 2ull << 30, NULL);
    gm_tel_alloc(&tel, 0, GM_API_MEM_ALLOC, 0x700000000000ull, MiB, 3000,
                 MiB, MiB);
    gm_tel_host(&tel, GM_API_MEM_HOST_ALLOC, HOST_ADDR, (int64_t)(2 * MiB));
    gm_tel_host(&tel, GM_API_MEM_FREE_HOST, HOST_ADDR, -(int64_t)(2 * MiB));
    snprintf(spid, sizeof spid, "%d", (int)getpid());

    struct gm_group_params gp = {
        .prefix = prefix, .name = "tt", .weight = 1.0,
        .limit = { .kind = GM_LIMIT_BYTES, .bytes = 1ull << 30 },
    };
    char msg[512] = "";
    ck_assert_msg(gm_group_join(&grp, &gp, msg, sizeof msg) == 0, "%s", msg);
    int gdev = gm_group_device(&grp, uuid, 80ull << 30, msg, sizeof msg);
    ck_assert_msg(gdev >= 0, "%s", msg);
    ck_assert(gm_group_reserve(&grp, gdev, MiB, NULL));
}

static void uncraft(void)
{
    gm_group_leave(&grp);
    gm_tel_close(&tel, false);
    remove_all();
}

/* ---- checks --------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), 0 when invalid. Made
 * another way than the tools' decoder (which checks the second byte's
 * range): decode the code point from the lead byte's length, then reject
 * what RFC 3629 forbids by value: overlong forms, surrogates, above
 * U+10FFFF. */
static size_t utf8_seq(const unsigned char *p)
{
    static const unsigned long least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    size_t n = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2
             : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n <= 1)
        return n;
    unsigned long cp = p[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < least[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return n;
}

/* Offset of the first byte that is not valid UTF-8, -1 when all is. */
static long utf8_bad_at(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        size_t n = utf8_seq(p + i);
        if (n == 0)
            return (long)i;
        i += n;
    }
    return -1;
}

/* Offset of the first byte a terminal would act on: a control byte other
 * than newline, DEL, a C1 character (U+0080..U+009F) or a byte that is
 * not UTF-8 (an 8-bit terminal reads 0x80..0x9f as C1); -1 when none. */
static long unsafe_at(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        size_t n = utf8_seq(p + i);
        if (n == 0 || (p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f ||
            (n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0))
            return (long)i;
        i += n;
    }
    return -1;
}

/* Up to n bytes of s for a failure message, every byte outside printable
 * ASCII (but newline) as \xHH, so that a failing run does not send the
 * escape sequences to the terminal of whoever runs it. */
static const char *visible(const char *s, size_t n)
{
    static char buf[8][16384];
    static int k;
    char *b = buf[k++ % 8];
    size_t j = 0;
    for (size_t i = 0; s[i] && i < n && j + 5 < sizeof buf[0]; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 0x20 && c < 0x7f) || c == '\n')
            b[j++] = (char)c;
        else
            j += (size_t)snprintf(b + j, 5, "\\x%02x", c);
    }
    b[j] = '\0';
    return b;
}

static void assert_terminal_safe(const char *what, const char *s)
{
    long at = unsafe_at(s);
    ck_assert_msg(at < 0, "%s: byte 0x%02x at %ld would reach the terminal:"
                  " ...%s", what, (unsigned char)s[at < 0 ? 0 : at], at,
                  visible(s + (at > 20 ? at - 20 : 0), 60));
}

/* ---- a small JSON checker (RFC 8259 syntax, strings byte-exact) ---------- */

static void ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\r' || **p == '\n')
        (*p)++;
}

static bool jvalue(const char **p, int depth);

static bool jstring(const char **p)
{
    const char *s = *p;
    if (*s++ != '"')
        return false;
    while (*s != '"') {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20)
            return false;               /* raw control: invalid JSON */
        if (c == '\\') {
            s++;
            if (*s == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!((s[i] >= '0' && s[i] <= '9') ||
                          (s[i] >= 'a' && s[i] <= 'f') ||
                          (s[i] >= 'A' && s[i] <= 'F')))
                        return false;
                s += 5;
            } else if (*s && strchr("\"\\/bfnrt", *s)) {
                s++;
            } else {
                return false;
            }
            continue;
        }
        size_t n = utf8_seq((const unsigned char *)s);
        if (n == 0)
            return false;
        s += n;
    }
    *p = s + 1;
    return true;
}

static bool jnumber(const char **p)
{
    const char *s = *p;
    if (*s == '-')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    while ((*s >= '0' && *s <= '9') || *s == '.' || *s == 'e' || *s == 'E' ||
           *s == '+' || *s == '-')
        s++;
    *p = s;
    return true;
}

static bool jlist(const char **p, int depth, char close, bool keyed)
{
    (*p)++;
    ws(p);
    if (**p == close) {
        (*p)++;
        return true;
    }
    for (;;) {
        ws(p);
        if (keyed) {
            if (!jstring(p))
                return false;
            ws(p);
            if (*(*p)++ != ':')
                return false;
        }
        if (!jvalue(p, depth + 1))
            return false;
        ws(p);
        if (**p == close) {
            (*p)++;
            return true;
        }
        if (*(*p)++ != ',')
            return false;
    }
}

static bool jvalue(const char **p, int depth)
{
    ws(p);
    if (depth > 64)
        return false;
    switch (**p) {
    case '{': return jlist(p, depth, '}', true);
    case '[': return jlist(p, depth, ']', false);
    case '"': return jstring(p);
    case 't': return strncmp(*p, "true", 4) == 0 && (*p += 4);
    case 'f': return strncmp(*p, "false", 5) == 0 && (*p += 5);
    case 'n': return strncmp(*p, "null", 4) == 0 && (*p += 4);
    default: return jnumber(p);
    }
}

/* One JSON value per line (JSON lines; a single document is one line). */
static void assert_json_lines(const char *what, const char *s)
{
    long bad = utf8_bad_at(s);
    ck_assert_msg(bad < 0, "%s: byte 0x%02x at %ld is not UTF-8: ...%s",
                  what, (unsigned char)s[bad < 0 ? 0 : bad], bad,
                  visible(s + (bad > 20 ? bad - 20 : 0), 60));
    unsigned lines = 0;
    for (const char *p = s; *p;) {
        const char *start = p;
        ck_assert_msg(jvalue(&p, 0), "%s: line %u is not JSON near "
                      "offset %ld: %s", what, lines + 1,
                      (long)(p - start), visible(p, 80));
        ck_assert_msg(*p == '\n', "%s: line %u: text after the value: "
                      "%s", what, lines + 1, visible(p, 40));
        p++;
        lines++;
    }
    ck_assert_msg(lines > 0, "%s: no output", what);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* The escaped command line, whole: the start and the rest. */
static void assert_term_cmd(const char *what, const char *s, size_t times)
{
    char whole[1024];
    snprintf(whole, sizeof whole, "%s%s", TERM_CMD, TERM_REST);
    ck_assert_msg(count(s, whole) == times, "%s: '%s' not %zu times in %s",
                  what, visible(whole, 1024), times, visible(s, 16000));
}

/* ---- text outputs ------------------------------------------------------------ */

START_TEST(ps_text_escapes_segment_text)
{
    craft();
    const char *argv[] = { gpumem(), "ps", NULL };
    ck_assert_int_eq(tool(argv), 0);
    assert_terminal_safe("gpumem ps", out);
    /* the process row and the group member row */
    assert_term_cmd("gpumem ps", out, 2);
    const char *arga[] = { gpumem(), "ps", "--all", NULL };
    ck_assert_int_eq(tool(arga), 0);
    assert_terminal_safe("gpumem ps --all", out);
    assert_term_cmd("gpumem ps --all", out, 2);
    const char *argo[] = { top(), "--once", NULL };
    ck_assert_int_eq(tool(argo), 0);
    assert_terminal_safe("gpumem-top --once", out);
    assert_term_cmd("gpumem-top --once", out, 2);
    uncraft();
}
END_TEST

START_TEST(log_text_escapes_segment_text)
{
    craft();
    const char *argv[] = { gpumem(), "log", spid, NULL };
    ck_assert_int_eq(tool(argv), 0);
    assert_terminal_safe("gpumem log PID", out);
    assert_term_cmd("gpumem log PID", out, 1);
    char head[1200];
    snprintf(head, sizeof head, "pid %s: %s%s [%s]\n", spid, TERM_CMD,
             TERM_REST, TERM_POLICY);
    ck_assert_msg(strncmp(out, head, strlen(head)) == 0, "want '%s' in %s",
                  visible(head, 1200), visible(out, 4000));
    const char *arga[] = { gpumem(), "log", NULL };
    ck_assert_int_eq(tool(arga), 0);
    assert_terminal_safe("gpumem log", out);
    ck_assert_msg(strncmp(out, head, strlen(head)) == 0, "want '%s' in %s",
                  visible(head, 1200), visible(out, 4000));
    uncraft();
}
END_TEST

/* ---- JSON outputs ------------------------------------------------------------ */

START_TEST(json_outputs_are_valid_utf8)
{
    craft();
    const char *argp[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argp), 0);
    assert_json_lines("gpumem ps --json", out);
    /* the process and the group member */
    ck_assert_uint_eq(count(out, JSON_CMD), 2);
    ck_assert_ptr_nonnull(strstr(out, "\"policy\":\"limit=2.0GiB "
                                      "\\u001b[31mred\\u001b[0m \\ufffd\""));
    const char *arga[] = { gpumem(), "ps", "--json", "--all", NULL };
    ck_assert_int_eq(tool(arga), 0);
    assert_json_lines("gpumem ps --json --all", out);
    const char *argt[] = { top(), "--json", "-n", "2", "-d", "0.1", NULL };
    ck_assert_int_eq(tool(argt), 0);
    assert_json_lines("gpumem-top --json", out);
    ck_assert_uint_eq(count(out, JSON_CMD), 4);
    const char *argl[] = { gpumem(), "log", "--format", "jsonl", spid, NULL };
    ck_assert_int_eq(tool(argl), 0);
    assert_json_lines("gpumem log --format jsonl", out);
    ck_assert_uint_eq(count(out, JSON_CMD), 1);
    ck_assert_uint_eq(count(out, "\"kind\":\"host\""), 2);
    const char *argr[] = { gpumem(), "report", "--json", spid, NULL };
    ck_assert_int_eq(tool(argr), 0);
    assert_json_lines("gpumem report --json", out);
    uncraft();
}
END_TEST

/* ---- the SVG title ----------------------------------------------------------- */

START_TEST(svg_title_escaped)
{
    craft();
    char svg[] = "/tmp/gmtx_svgXXXXXX";
    int fd = mkstemp(svg);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const char *argv[] = { gpumem(), "report", spid, "--svg", svg, NULL };
    ck_assert_int_eq(tool(argv), 0);
    FILE *f = fopen(svg, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, OUT_CAP - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(svg);
    ck_assert(strncmp(out, "<svg", 4) == 0);
    assert_terminal_safe("svg", out);
    ck_assert_msg(strstr(out, TERM_CMD) != NULL, "no '%s' in %s", TERM_CMD,
                  visible(out, 16000));
    uncraft();
}
END_TEST

/* ---- the interactive gpumem-top ---------------------------------------------- */

static int tmux(const char *sock, const char *const *args, char *buf,
                size_t cap)
{
    const char *argv[16] = { "/usr/bin/env", "tmux", "-L", sock };
    size_t k = 4;
    for (; *args && k < 15; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    return gm_run(NULL, 0, argv, buf, cap);
}

/* Polls the screen until it holds `want` (at most ~10 s); the screen is
 * left in out. */
static bool screen_shows(const char *sock, const char *want)
{
    const char *cap[] = { "capture-pane", "-p", "-t", "top", NULL };
    for (int i = 0; i < 200; i++) {
        if (tmux(sock, cap, out, OUT_CAP) == 0 && strstr(out, want))
            return true;
        usleep(50000);
    }
    return false;
}

START_TEST(top_screen_escapes_segment_text)
{
    char sock[64], cmd[2048], abs[1024];
    static char screen[OUT_CAP];
    const char *ver[] = { "-V", NULL };
    snprintf(sock, sizeof sock, "gmtx%d", (int)getpid());
    if (tmux(sock, ver, screen, sizeof screen) != 0) {
        fprintf(stderr, "tmux not installed: interactive view not tested\n");
        return;
    }
    craft();
    ck_assert_ptr_nonnull(realpath(gm_build_dir(), abs));
    snprintf(cmd, sizeof cmd, "TERM=xterm-256color %s/gpumem-top -d 0.2 "
             "--prefix %s", abs, prefix);
    const char *start[] = { "new-session", "-d", "-s", "top", "-x", "250",
                            "-y", "30", cmd, NULL };
    ck_assert_int_eq(tmux(sock, start, screen, sizeof screen), 0);
    /* gpumem-top is ASCII only: UTF-8 shows as \xHH too */
    bool row = screen_shows(sock, "evil \\x1b]0;pwned\\x07\\x1b[2J c1=\\x9b31m"
                            " bad=\\xff\\xfe caf\\xc3\\xa9 enc=\\xc2\\x9b1m");
    memcpy(screen, out, strlen(out) + 1);
    bool detail = false;
    if (row) {
        const char *enter[] = { "send-keys", "-t", "top", "Enter", NULL };
        tmux(sock, enter, out, OUT_CAP);
        detail = screen_shows(sock, TERM_POLICY);
    }
    const char *quit[] = { "kill-server", NULL };
    tmux(sock, quit, NULL, 0);
    ck_assert_msg(row, "table never showed the escaped command:\n%s",
                  visible(screen, 16000));
    ck_assert_msg(detail, "detail never showed the escaped policy:\n%s",
                  visible(out, 16000));
    uncraft();
}
END_TEST

/* ---- host events in the text log ---------------------------------------------- */

START_TEST(log_text_host_event_fields)
{
    craft();
    const char *argv[] = { gpumem(), "log", "--kinds", "host", spid, NULL };
    ck_assert_int_eq(tool(argv), 0);
    const char *a = strstr(out, " host host       cuMemHostAlloc");
    const char *f = strstr(out, " host host       cuMemFreeHost");
    ck_assert_msg(a != NULL && f != NULL, "%s", visible(out, 16000));
    /* the signed delta, the host address, the pinned total after */
    ck_assert_msg(strstr(a, "+2.0 MiB at 0x7f0000001000 pinned 2.0 MiB\n")
                  != NULL, "%s", visible(out, 16000));
    ck_assert_msg(strstr(f, "-2.0 MiB at 0x7f0000001000 pinned 0 B\n")
                  != NULL, "%s", visible(out, 16000));
    /* never the delta as an address */
    ck_assert_ptr_null(strstr(out, "at 0x200000"));
    ck_assert_ptr_null(strstr(out, "at 0xffffffffffe00000"));
    uncraft();
}
END_TEST

/* ---- values this build does not know ------------------------------------------ */

/* A newer writer's kind and API: printed by number in text, jsonl, csv. */
START_TEST(log_unknown_kind_by_number)
{
    craft();
    gm_tel_event(&tel, 77, 0, 99, 4096, 0x1000, MiB);
    const char *text[] = { gpumem(), "log", spid, NULL };
    ck_assert_int_eq(tool(text), 0);
    ck_assert_msg(strstr(out, " kind77     api99 ") != NULL, "%s",
                  visible(out, 16000));
    const char *jsonl[] = { gpumem(), "log", "--format", "jsonl", spid,
                            NULL };
    ck_assert_int_eq(tool(jsonl), 0);
    ck_assert_msg(strstr(out, "\"kind\":\"kind77\",\"api\":\"api99\",")
                  != NULL, "%s", visible(out, 16000));
    const char *csv[] = { gpumem(), "log", "--format", "csv", spid, NULL };
    ck_assert_int_eq(tool(csv), 0);
    ck_assert_msg(strstr(out, ",kind77,api99,0,") != NULL, "%s",
                  visible(out, 16000));
    ck_assert_ptr_null(strstr(out, ",?,"));
    uncraft();
}
END_TEST

/* A gap of one event is "lost 1 event", of two "lost 2 events". */
START_TEST(log_text_lost_count_in_words)
{
    craft();   /* 3 events in a ring of 64 */
    for (int i = 0; i < 62; i++)
        gm_tel_event(&tel, GM_EV_MARK, 0, GM_API_NONE, 0, (uint64_t)i, MiB);
    const char *argv[] = { gpumem(), "log", spid, NULL };
    char want[64];
    snprintf(want, sizeof want, "pid %s: lost 1 event\n", spid);
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_msg(strstr(out, want) != NULL, "%s", visible(out, 16000));
    gm_tel_event(&tel, GM_EV_MARK, 0, GM_API_NONE, 0, 62, MiB);
    snprintf(want, sizeof want, "pid %s: lost 2 events\n", spid);
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_msg(strstr(out, want) != NULL, "%s", visible(out, 16000));
    uncraft();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tool_text");
    TCase *t = tcase_create("tool_text");
    tcase_set_timeout(t, 60);
    tcase_add_unchecked_fixture(t, NULL, remove_all);
    tcase_add_test(t, ps_text_escapes_segment_text);
    tcase_add_test(t, log_text_escapes_segment_text);
    tcase_add_test(t, json_outputs_are_valid_utf8);
    tcase_add_test(t, svg_title_escaped);
    tcase_add_test(t, top_screen_escapes_segment_text);
    tcase_add_test(t, log_text_host_event_fields);
    tcase_add_test(t, log_unknown_kind_by_number);
    tcase_add_test(t, log_text_lost_count_in_words);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    runner_pid = (int)getpid();
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    remove_all();
    return failed == 0 ? 0 : 1;
}
