/*
 * tools/top/view.c — drawing of `gpumem-top` with ncurses (see tools/top/view.h):
 * the device summary with bars (one line per card, labelled by its
 * ordinals and short UUID), one line per shared budget (group) with
 * its bar and members, the process table, the detail view of one
 * process (usage sparkline with the limit line and OOM marks, size and
 * latency histograms, last events, policy) and the key help.
 *
 * Invariants: drawing only, from the model; each frame is erase() + draw
 * into the curses buffer + one refresh(), so the terminal gets only the
 * difference and never flickers; every write is clipped to the screen,
 * at a character's boundary, and padded by display columns. ASCII only,
 * so any terminal and `tmux capture-pane` show it as drawn, but for the
 * unit "µs", drawn only when the locale's codeset is UTF-8 ("us"
 * otherwise): text from a segment (command, policy, group name) and the
 * user name are drawn in the terminal form of tools/lib/escape.h with
 * GM_ESC_ASCII. Lines that hold a list (group members, the detail view's
 * figures) wrap at the screen's edge instead of being cut. Nothing but a
 * key line is drawn on the last line (clip_lines); under MIN_LINES the
 * screen is one line saying the terminal is too small.
 */
#include "tools/top/view.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/parse.h"
#include "shim/telemetry/report.h"
#include "tools/lib/card.h"
#include "tools/lib/escape.h"
#include "tools/lib/reader.h"
#include "tools/lib/util.h"

enum { PAIR_BAR = 1, PAIR_WARN, PAIR_BAD, PAIR_HEAD, PAIR_TITLE };

struct coldef {
    enum gm_top_col col;
    const char *name;
    int width;
    int drop;                    /* 0: always shown; else dropped when the
                                    terminal is narrow, 1 first */
    bool left;
};

/* The fewest lines a screen is drawn in: the table's title, header, one
 * row and key line. */
#define MIN_LINES 4

/* COMMAND keeps a fifth of the width, 20 columns at least. */
#define CMD_MIN 20
#define DROPS 9

static const struct coldef cols[] = {
    { GM_COL_PID, "PID", 7, 0, false },
    { GM_COL_USER, "USER", 8, 2, true },
    { GM_COL_JOB, "JOB", 14, 1, true },
    { GM_COL_DEV, "DEV", 3, 0, false },
    { GM_COL_USED, "USED", 7, 0, false },
    { GM_COL_PEAK, "PEAK", 7, 9, false },
    { GM_COL_LIMIT, "LIMIT", 7, 0, false },
    { GM_COL_PCT, "%LIMIT", 9, 0, true },
    { GM_COL_ARATE, "ALLOC/s", 7, 0, false },
    { GM_COL_FRATE, "FREE/s", 7, 5, false },
    { GM_COL_OOMS, "OOMS", 5, 0, false },
    { GM_COL_FRAG, "FRAG@PK", 7, 6, false },
    { GM_COL_P99, "P99", 8, 8, false },
    { GM_COL_TREND, "TREND", 8, 7, false },
    { GM_COL_ETA, "ETA", 6, 4, false },
    { GM_COL_MODE, "MODE", 6, 3, true },
    { GM_COL_CMD, "COMMAND", CMD_MIN, 0, true },
};
#define NCOLS (sizeof cols / sizeof cols[0])

static bool utf8_units;          /* the locale's codeset is UTF-8 */

const char *gm_view_col_name(enum gm_top_col c)
{
    for (size_t i = 0; i < NCOLS; i++)
        if (cols[i].col == c)
            return cols[i].name;
    return "?";
}

int gm_view_open(void)
{
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C");  /* figures as documented: 1.5, not 1,5 */
    utf8_units = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    set_escdelay(25);
    if (initscr() == NULL)
        return -1;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(PAIR_BAR, COLOR_GREEN, -1);
        init_pair(PAIR_WARN, COLOR_YELLOW, -1);
        init_pair(PAIR_BAD, COLOR_RED, -1);
        init_pair(PAIR_HEAD, COLOR_BLACK, COLOR_CYAN);
        init_pair(PAIR_TITLE, COLOR_CYAN, -1);
    }
    return 0;
}

void gm_view_close(void)
{
    endwin();
}

int gm_view_key(int timeout_ms)
{
    timeout(timeout_ms);
    return getch();
}

/* ---- primitives ---------------------------------------------------------------- */

/* Display columns of s: every byte but UTF-8 continuation bytes. */
static int width_of(const char *s)
{
    int w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += (*p & 0xc0) != 0x80;
    return w;
}

/* Bytes of s that fill at most w columns, whole characters only. */
static int bytes_for(const char *s, int w)
{
    int n = 0, c = 0;
    while (s[n] != '\0') {
        int k = 1;
        while (s[n + k] != '\0' && ((unsigned char)s[n + k] & 0xc0) == 0x80)
            k++;
        if (c + 1 > w)
            break;
        c++;
        n += k;
    }
    return n;
}

/* The lines the part being drawn may write, from 0: the whole screen
 * for a key line, the lines above it for the rest (so that nothing is
 * ever drawn over a key line). */
static int clip_lines;

static bool on_screen(int y, int x)
{
    return y >= 0 && y < clip_lines && y < LINES && x >= 0 && x < COLS;
}

static void put_ch(int y, int x, chtype c)
{
    if (on_screen(y, x))
        mvaddch(y, x, c);
}

/* Line y blank across the screen (in the current attributes). */
static void fill_line(int y)
{
    if (on_screen(y, 0))
        mvhline(y, 0, ' ', COLS);
}

/* s at y,x, at most w columns of it (and never past the screen). */
static void put_n(int y, int x, int w, const char *s)
{
    if (!on_screen(y, x))
        return;
    w = w < COLS - x ? w : COLS - x;
    if (w > 0)
        mvaddnstr(y, x, s, bytes_for(s, w));
}

static void put(int y, int x, const char *s)
{
    put_n(y, x, COLS, s);
}

/* s in a cell of w columns: cut to w, padded on the left or the right. */
static void put_cell(int y, int x, int w, bool left, const char *s)
{
    int sw = width_of(s);
    int pad = sw < w ? w - sw : 0;
    put_n(y, left ? x : x + pad, w, s);
}

/* A latency ("131.1 µs"; "131.1 us" unless the locale is UTF-8). */
static void latency(uint64_t ns, char *buf, size_t cap)
{
    gm_format_latency(ns, buf, cap);
    char *mu = strstr(buf, "\xc2\xb5s");   /* "µs" */
    if (mu != NULL && !utf8_units) {
        mu[0] = 'u';
        memmove(mu + 1, mu + 2, strlen(mu + 2) + 1);
    }
}

static void putf(int y, int x, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void putf(int y, int x, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(y, x, buf);
}

static int level_pair(uint64_t used, uint64_t limit)
{
    uint64_t pct = gm_share(used, limit, 100);
    if (limit == 0)
        return PAIR_BAR;
    if (pct >= 90)
        return PAIR_BAD;
    return pct >= 70 ? PAIR_WARN : PAIR_BAR;
}

/* "[#####     ]" of width w (>= 3) at y,x: frac of it filled. */
static void bar(int y, int x, int w, uint64_t v, uint64_t max, int pair)
{
    if (w < 3)
        return;
    int inner = w - 2, fill = 0;
    if (max > 0) {
        double f = (double)v / (double)max;
        fill = (int)(f * inner + 0.5);
        fill = fill > inner ? inner : fill;
    }
    put(y, x, "[");
    attron(COLOR_PAIR(pair));
    for (int i = 0; i < inner; i++)
        put_ch(y, x + 1 + i, i < fill ? '#' : ' ');
    attroff(COLOR_PAIR(pair));
    put(y, x + w - 1, "]");
}

/* Items written one after the other from y,x, separated by sep, onto
 * more lines (starting at column indent) when the next one does not fit;
 * at most maxl lines, the last one ending in "+N more" when items are
 * left. Returns the line after the last one written. */
static int flow(int y, int x, int indent, const char *const *items, size_t n,
                const char *sep, int maxl)
{
    int line = 0;
    for (size_t i = 0; i < n; i++) {
        int w = width_of(items[i]) + (i ? width_of(sep) : 0);
        if (x + w > COLS && x > indent) {
            if (line + 1 >= maxl) {
                char more[32];
                snprintf(more, sizeof more, "%s+%zu more", i ? sep : "",
                         n - i);
                put(y, x + width_of(more) <= COLS ? x
                                                  : COLS - width_of(more),
                    more);
                break;
            }
            line++;
            y++;
            x = indent;
        } else if (i > 0) {   /* the separator stays with what it follows */
            put(y, x, sep);
            x += width_of(sep);
        }
        put(y, x, items[i]);
        x += width_of(items[i]);
    }
    return y + 1;
}

/* ---- table screen ------------------------------------------------------------ */

static void title_line(const struct gm_top_model *m)
{
    char when[16];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    attron(A_BOLD | COLOR_PAIR(PAIR_TITLE));
    putf(0, 0, "gpumem-top  %s  prefix %s  %zu rows  every %.1fs", when,
         m->prefix, m->nrows, m->delay_s);
    attroff(A_BOLD | COLOR_PAIR(PAIR_TITLE));
}

/* The figures of a device line: "used 1.3G  limits 900.0M + unlimited
 * physical 1.0G  2 procs". "limits" sums the processes' limits; one
 * without any makes the sum no bound, so it reads "none" when all are
 * unlimited and "X + unlimited" when some are. */
static void device_text(const struct gm_top_devsum *d, char *b, size_t cap)
{
    char used[16], lim[16], phys[16], limits[40];
    gm_size_short(d->used, used, sizeof used);
    gm_size_short(d->limits, lim, sizeof lim);
    gm_size_short(d->physical, phys, sizeof phys);
    if (d->unlimited && d->limits == 0)
        snprintf(limits, sizeof limits, "none");
    else
        snprintf(limits, sizeof limits, "%s%s", lim,
                 d->unlimited ? " + unlimited" : "");
    snprintf(b, cap, "used %s  limits %s  physical %s  %u proc%s", used,
             limits, phys, d->procs, d->procs == 1 ? "" : "s");
}

/* One line per card: "dev " and its label, a bar of used against physical, the
 * figures. Labels and bars are of one width on every line, the bar as
 * wide as leaves room for the longest figures (40 at most; none below
 * 5). */
static int device_lines(const struct gm_top_model *m, int y)
{
    char text[128];
    int lw = 0, tw = 0;
    for (size_t i = 0; i < m->ndevs; i++) {
        device_text(&m->devs[i], text, sizeof text);
        int w = 4 + width_of(m->devs[i].label);   /* "dev " */
        lw = w > lw ? w : lw;
        tw = width_of(text) > tw ? width_of(text) : tw;
    }
    int bw = COLS - (lw + 2) - 1 - tw;
    bw = bw > 40 ? 40 : bw;
    for (size_t i = 0; i < m->ndevs && y < LINES - 4; i++, y++) {
        const struct gm_top_devsum *d = &m->devs[i];
        uint64_t scale = d->physical ? d->physical : d->limits;
        putf(y, 0, "dev %s", d->label);
        int x = lw + 2;
        if (bw >= 5) {
            bar(y, x, bw, d->used, scale, level_pair(d->used, d->limits));
            x += bw + 1;
        }
        device_text(d, text, sizeof text);
        put(y, x, text);
    }
    if (m->ndevs == 0 && y < LINES - 4)
        put(y++, 0, "no device in use");
    return y;
}

#define MEMBER_TEXT 48

/* "1951 464.0M/2.7G": a member's use and guaranteed share. */
static void member_text(const struct gm_top_group *g, unsigned i,
                        char buf[MEMBER_TEXT])
{
    const struct gm_top_gmember *mb = &g->member[i];
    char used[16], share[16] = "-";
    gm_size_short(mb->used, used, sizeof used);
    if (g->limit)
        gm_size_short(mb->share, share, sizeof share);
    snprintf(buf, MEMBER_TEXT, "%d%s %s/%s", mb->pid,
             mb->alive ? "" : "(dead)", used, share);
}

/* One line per group and device: name, used/limit bar, the figures, then
 * the members, wrapped onto up to 3 more lines. */
static int group_lines(const struct gm_top_model *m, int y)
{
    static char text[GM_GROUP_MAX_MEMBERS][MEMBER_TEXT];
    const char *items[GM_GROUP_MAX_MEMBERS + 1];
    for (size_t i = 0; i < m->ngroups && y < LINES - 4; i++) {
        const struct gm_top_group *g = &m->groups[i];
        char used[16], lim[16] = "none", peak[16], pk[32] = "";
        char head[160], dead[24] = "";
        gm_size_short(g->used, used, sizeof used);
        gm_size_short(g->peak, peak, sizeof peak);
        if (g->limit)
            gm_size_short(g->limit, lim, sizeof lim);
        if (g->dead)
            snprintf(dead, sizeof dead, " (+%u dead)", g->dead);
        char name[GM_ESC_TERM_CAP(sizeof g->name)];
        putf(y, 0, "group %-12.12s",
             gm_esc_term(g->name, GM_ESC_ASCII, name, sizeof name));
        /* Narrow terminals: a shorter bar and no peak. */
        bool wide = COLS >= 110;
        int x = 19, bw = wide ? 20 : 10;
        bar(y, x, bw, g->used, g->limit ? g->limit : g->physical,
            level_pair(g->used, g->limit));
        x += bw + 1;
        if (wide)
            snprintf(pk, sizeof pk, "  peak %s", peak);
        snprintf(head, sizeof head, "%s%sused %s / limit %s%s  %u member%s%s:",
                 g->device, g->device[0] ? "  " : "", used, lim, pk, g->live,
                 g->live == 1 ? "" : "s", dead);
        size_t n = 0;
        items[n++] = head;
        for (unsigned k = 0; k < g->nmembers; k++) {
            member_text(g, k, text[k]);
            items[n++] = text[k];
        }
        /* The members after the head, ", " between them. */
        put(y, x, head);
        x += width_of(head) + 1;
        int room = LINES - 4 - y;
        y = n > 1 ? flow(y, x, 6, items + 1, n - 1, ", ", room < 4 ? room : 4)
                  : y + 1;
    }
    return y;
}

/* Which columns fit in `width` with COMMAND's share: all, less those
 * dropped in their order (drop 1 first) until the rest fit. */
static void pick_columns(int width, bool with_job, bool *show)
{
    int cmd = width / 5 > CMD_MIN ? width / 5 : CMD_MIN;
    int need = -1;
    for (size_t i = 0; i < NCOLS; i++) {
        show[i] = cols[i].col != GM_COL_JOB || with_job;
        if (show[i])
            need += (cols[i].col == GM_COL_CMD ? cmd : cols[i].width) + 1;
    }
    for (int d = 1; d <= DROPS && need > width; d++)
        for (size_t i = 0; i < NCOLS; i++)
            if (cols[i].drop == d && show[i]) {
                show[i] = false;
                need -= cols[i].width + 1;
            }
}

/* The COMMAND cell in w columns: the program without its directory and
 * its arguments. When that does not fit and another row of the same
 * program shares the first arguments, those are shown as "..", so the
 * rows differ: "prog .. ARGS", or ".. ARGS" when the first differing
 * argument would not fit after the program. */
static void command_text(const struct gm_top_ent *e, int w, char *b,
                         size_t cap)
{
    static char prog[GM_ABI_CMDLINE_LEN];
    static char tmp[GM_ESC_TERM_CAP(GM_ABI_CMDLINE_LEN)];
    size_t n = e->cmd_args - e->cmd_prog;
    memcpy(prog, e->cmd + e->cmd_prog, n);
    prog[n] = '\0';
    gm_esc_term(prog, GM_ESC_ASCII, b, cap);
    size_t k = strlen(b);
    gm_esc_term(e->cmd + e->cmd_args, GM_ESC_ASCII, tmp, sizeof tmp);
    if (e->cmd_diff == e->cmd_args || width_of(b) + width_of(tmp) <= w) {
        snprintf(b + k, cap - k, "%s", tmp);
        return;
    }
    gm_esc_term(e->cmd + e->cmd_diff, GM_ESC_ASCII, tmp, sizeof tmp);
    int word = (int)strcspn(tmp, " ");
    if (width_of(b) + 4 + word > w)
        k = 0;                   /* the program does not leave room */
    snprintf(b + k, cap - k, "%s.. %s", k ? " " : "", tmp);
}

/* TREND: "+3.0M/st" (per step) or "+1.9M/s", "flat" when judged steady,
 * "?" before there is enough history. */
static void trend_text(const struct gm_top_ent *e, char *b, size_t cap)
{
    char sz[16];
    if (e->trend == 1) {
        snprintf(b, cap, "flat");
        return;
    }
    if (e->trend != 2 || !(e->growth >= 0)) {
        snprintf(b, cap, "?");
        return;
    }
    gm_size_short(e->growth >= 1.8e19 ? UINT64_MAX : (uint64_t)(e->growth + 0.5),
                  sz, sizeof sz);
    snprintf(b, cap, "+%s/%s", sz, e->per_step ? "st" : "s");
}

/* ETA: "45s", "12m", "3.5h", "2d". */
static void eta_text(double s, char *b, size_t cap)
{
    if (s < 120)
        snprintf(b, cap, "%.0fs", s);
    else if (s < 7200)
        snprintf(b, cap, "%.0fm", s / 60);
    else if (s < 172800)
        snprintf(b, cap, "%.1fh", s / 3600);
    else
        snprintf(b, cap, "%.0fd", s / 86400);
}

static void cell(const struct gm_top_ent *e, enum gm_top_col c, char *b,
                 size_t cap)
{
    const struct gm_abi_dev *d = &e->d;
    b[0] = '\0';
    switch (c) {
    case GM_COL_PID:
        if (e->show_pid > 0)
            snprintf(b, cap, "%d", e->show_pid);
        else
            snprintf(b, cap, "~%d", e->pid);
        break;
    case GM_COL_JOB: snprintf(b, cap, "%s", e->job); break;
    case GM_COL_USER: gm_esc_term(e->user, GM_ESC_ASCII, b, cap); break;
    case GM_COL_DEV:
        snprintf(b, cap, e->dev < 0 ? "-" : "%d", e->dev);
        break;
    case GM_COL_USED: gm_size_short(d->used, b, cap); break;
    case GM_COL_PEAK: gm_size_short(d->peak, b, cap); break;
    case GM_COL_LIMIT:
        if (d->limit)
            gm_size_short(d->limit, b, cap);
        else
            snprintf(b, cap, "-");
        break;
    case GM_COL_ARATE: snprintf(b, cap, "%.0f", e->arate); break;
    case GM_COL_FRATE: snprintf(b, cap, "%.0f", e->frate); break;
    case GM_COL_OOMS:
        snprintf(b, cap, "%llu", (unsigned long long)d->refusals);
        break;
    case GM_COL_FRAG:
        snprintf(b, cap, "%.1f%%", (double)d->frag_peak_ppm / 10000.0);
        break;
    case GM_COL_P99:
        if (d->allocs)
            latency(gm_dev_lat_q(d, 990), b, cap);
        else
            snprintf(b, cap, "-");
        break;
    case GM_COL_TREND: trend_text(e, b, cap); break;
    case GM_COL_ETA:
        if (e->trend == 2 && e->eta_s == e->eta_s)
            eta_text(e->eta_s, b, cap);
        else
            snprintf(b, cap, "-");
        break;
    case GM_COL_MODE: snprintf(b, cap, "%s", e->mode); break;
    default: break;
    }
}

/* %LIMIT: "[#  ] 16%" of the limit; in static mode "arena 40%", how full
 * the arena (charged whole) is. */
static void pct_cell(int y, int x, const struct gm_top_ent *e)
{
    const struct gm_abi_dev *d = &e->d;
    if (e->arena) {
        putf(y, x, "arena%3llu%%",
             (unsigned long long)gm_pct_shown(e->arena_used, e->arena_size));
        return;
    }
    if (d->limit == 0) {
        put(y, x, " no limit");
        return;
    }
    bar(y, x, 5, d->used, d->limit, level_pair(d->used, d->limit));
    putf(y, x + 5, "%3llu%%",
         (unsigned long long)gm_pct_shown(d->used, d->limit));
}

static void header_line(const struct gm_top_model *m, int y, const bool *show)
{
    int x = 0;
    attron(COLOR_PAIR(PAIR_HEAD) | A_BOLD);
    fill_line(y);
    for (size_t i = 0; i < NCOLS; i++) {
        if (!show[i])
            continue;
        char name[24];
        snprintf(name, sizeof name, "%s%s", cols[i].name,
                 cols[i].col == m->sort ? (m->desc ? "v" : "^") : "");
        int w = cols[i].col == GM_COL_CMD ? COLS - x : cols[i].width;
        int nw = width_of(name);
        put_cell(y, x, w > nw ? w : nw, cols[i].left, name);
        x += cols[i].width + 1;
    }
    attroff(COLOR_PAIR(PAIR_HEAD) | A_BOLD);
}

static void table_row(int y, const struct gm_top_ent *e, const bool *show,
                      bool sel)
{
    int x = 0;
    attr_t a = (sel ? A_REVERSE : 0) | (e->gone ? A_DIM : 0);
    attron(a);
    if (sel)
        fill_line(y);
    for (size_t i = 0; i < NCOLS; i++) {
        if (!show[i])
            continue;
        char b[GM_ESC_TERM_CAP(GM_ABI_CMDLINE_LEN) + 16];
        if (cols[i].col == GM_COL_PCT) {
            pct_cell(y, x, e);
        } else if (cols[i].col == GM_COL_CMD) {
            int w = COLS - x;
            if (e->gone) {   /* "(exited) ", "(kept) ", "(dead) " */
                char st[16];
                snprintf(st, sizeof st, "(%s) ", e->state);
                put(y, x, st);
                x += width_of(st);
                w -= width_of(st);
            }
            command_text(e, w, b, sizeof b);
            put_n(y, x, w, b);
        } else {
            cell(e, cols[i].col, b, sizeof b);
            put_cell(y, x, cols[i].width, cols[i].left, b);
        }
        x += cols[i].width + 1;
    }
    attroff(a);
}

/* The key line, shortened to fit: the full one, then the keys in brief,
 * then the sort, the device shown and the help and quit keys alone. */
static void status_line(const struct gm_top_model *m)
{
    char dev[40] = "all", filt[96] = "", line[3][512];
    char job[80] = "";
    if (m->dev_filter[0])
        snprintf(dev, sizeof dev, "%s", m->dev_filter);
    if (m->job_filter[0])
        snprintf(job, sizeof job, "  job: %.60s", m->job_filter);
    clip_lines = LINES;
    if (m->editing) {
        attron(A_BOLD);
        putf(LINES - 1, 0, "filter command: %s_", m->text_filter);
        attroff(A_BOLD);
        return;
    }
    if (m->text_filter[0])
        snprintf(filt, sizeof filt, "  filter: '%s'", m->text_filter);
    const char *sort = gm_view_col_name(m->sort), *dir = m->desc ? "desc"
                                                                   : "asc";
    snprintf(line[0], sizeof line[0], "sort: %s %s  dev: %s%s%s  [s/S sort  "
             "d dev  %s/ filter  Enter detail  h help  q quit]", sort, dir,
             dev, job, filt, m->show_job ? "j job  " : "");
    snprintf(line[1], sizeof line[1], "sort: %s %s  dev: %s%s%s  s/S sort "
             "d dev %s/ filter Enter detail h help q quit", sort, dir, dev,
             job, filt, m->show_job ? "j job " : "");
    snprintf(line[2], sizeof line[2], "sort: %s %s  dev: %s  h help  q quit",
             sort, dir, dev);
    int k = 0;
    while (k < 2 && width_of(line[k]) > COLS)
        k++;
    put(LINES - 1, 0, line[k]);
}

/* Title, device and group lines, a blank line, the header and the rows,
 * the key line last. The device and group lines leave room for the
 * header and one row; the blank line is left out when it would not. */
static void draw_table(const struct gm_top_model *m)
{
    bool show[NCOLS];
    int bottom = LINES - 1;      /* the key line */
    clip_lines = bottom;
    title_line(m);
    int y = group_lines(m, device_lines(m, 1));
    if (y + 3 <= bottom)
        y++;
    pick_columns(COLS, m->show_job, show);
    header_line(m, y++, show);
    int room = bottom - y;
    size_t first = 0;
    if (room > 0 && m->selected >= (size_t)room)
        first = m->selected - (size_t)room + 1;
    for (size_t i = first; i < m->nrows && y < bottom; i++, y++)
        table_row(y, m->rows[i], show, i == m->selected);
    if (m->nrows == 0 && y < bottom)
        put(y, 0, "no process is using the gpumem library under this "
            "prefix");
    status_line(m);
}

/* ---- detail screen ------------------------------------------------------------ */

#define FIELD 72

/* The figures of the detail view, as "name value" items. */
static size_t detail_fields(const struct gm_top_ent *e, char f[][FIELD])
{
    const struct gm_abi_dev *d = &e->d;
    char a[24], b[24];
    size_t n = 0;
    gm_size_short(d->used, a, sizeof a);
    snprintf(f[n++], FIELD, "used %s", a);
    gm_size_short(d->peak, a, sizeof a);
    snprintf(f[n++], FIELD, "peak %s", a);
    if (d->limit)
        gm_size_short(d->limit, a, sizeof a);
    snprintf(f[n++], FIELD, "limit %s", d->limit ? a : "none");
    gm_size_short(d->context_bytes, a, sizeof a);
    snprintf(f[n++], FIELD, "context %s", a);
    snprintf(f[n++], FIELD, "allocs %llu", (unsigned long long)d->allocs);
    snprintf(f[n++], FIELD, "frees %llu", (unsigned long long)d->frees);
    snprintf(f[n++], FIELD, "OOMs %llu", (unsigned long long)d->refusals);
    snprintf(f[n++], FIELD, "live %llu", (unsigned long long)d->live_allocs);
    snprintf(f[n++], FIELD, "frag %.1f%% now, %.1f%% at peak",
             (double)d->frag_ppm / 10000.0,
             (double)d->frag_peak_ppm / 10000.0);
    if (e->arena) {
        gm_size_short(e->arena_size, a, sizeof a);
        gm_size_short(e->arena_used, b, sizeof b);
        snprintf(f[n++], FIELD, "arena %s: %s allocated (%llu%%)", a, b,
                 (unsigned long long)gm_pct_shown(e->arena_used,
                                                  e->arena_size));
    }
    latency(gm_dev_lat_q(d, 500), a, sizeof a);
    latency(gm_dev_lat_q(d, 990), b, sizeof b);
    snprintf(f[n++], FIELD, "alloc latency p50 %s p99 %s", a, b);
    snprintf(f[n++], FIELD, "%.0f allocs/s %.0f frees/s", e->arate,
             e->frate);
    return n;
}

static int detail_head(const struct gm_top_ent *e, int y)
{
    char text[GM_ESC_TERM_CAP(GM_ABI_CMDLINE_LEN)];
    char f[16][FIELD];
    const char *items[16];
    char pid[64];
    if (e->pidns == 0)
        snprintf(pid, sizeof pid, "%d", e->show_pid > 0 ? e->show_pid
                                                          : e->pid);
    else if (e->show_pid > 0)   /* another pid namespace: both pids */
        snprintf(pid, sizeof pid, "%d (%d in its namespace)", e->show_pid,
                 e->pid);
    else
        snprintf(pid, sizeof pid, "~%d (in its namespace)", e->pid);
    /* The card too: processes may see different cards as one ordinal. */
    char card[24] = "";
    unsigned char u[16];
    memcpy(u, e->d.uuid, sizeof u);
    if (gm_uuid_recorded(u)) {
        char sh[16];
        snprintf(card, sizeof card, " %s", gm_uuid_short(u, sh, sizeof sh));
    }
    attron(A_BOLD | COLOR_PAIR(PAIR_TITLE));
    putf(y++, 0, "DETAIL  pid %s  device %d%s%s%s%s  %s", pid, e->dev, card,
         e->gone ? "  (" : "", e->gone ? e->state : "", e->gone ? ")" : "",
         gm_esc_term(e->cmd, GM_ESC_ASCII, text, sizeof text));
    attroff(A_BOLD | COLOR_PAIR(PAIR_TITLE));
    if (strcmp(e->job, "-") != 0) {
        const struct gm_abi_ident *id = &e->ident;
        putf(y++, 0, "job %s%s%s%s%s%s%s%s%s", e->job,
             id->job_user[0] ? "  user " : "", id->job_user,
             id->container_name[0] ? "  container " : "", id->container_name,
             id->container_id[0] ? "  id " : "", id->container_id,
             id->runtime[0] ? "  " : "", id->runtime);
    }
    size_t n = detail_fields(e, f);
    for (size_t i = 0; i < n; i++)
        items[i] = f[i];
    y = flow(y, 0, 0, items, n, "  ", 4);
    putf(y++, 0, "policy: %s",
         gm_esc_term(e->policy, GM_ESC_ASCII, text, sizeof text));
    return y;
}

/* Usage history: one column per sample, newest at the right. */
static int sparkline(const struct gm_top_ent *e, int y, int h)
{
    int w = COLS - 10;
    if (h < 2 || w < 10)
        return y;
    size_t n = e->nhist < (size_t)w ? e->nhist : (size_t)w;
    size_t from = e->nhist - n;
    uint64_t top = e->d.limit;
    for (size_t i = from; i < e->nhist; i++)
        top = e->hist[i] > top ? e->hist[i] : top;
    top = top ? top : 1;
    char lab[16];
    gm_size_short(top, lab, sizeof lab);
    putf(y, 0, "%8s", lab);
    put(y + h - 1, 0, "       0");
    int lim_row = e->d.limit ? h - 1 - (int)((double)e->d.limit / (double)top
                                             * (h - 1) + 0.5) : -1;
    for (int r = 0; r < h; r++) {
        int level = h - 1 - r;   /* rows above the bottom */
        for (size_t k = 0; k < n; k++) {
            uint64_t v = e->hist[from + k];
            double cells = (double)v / (double)top * h;
            int x = 9 + (int)k;
            if (e->hist_oom[from + k] && r == 0) {
                attron(COLOR_PAIR(PAIR_BAD) | A_BOLD);
                put_ch(y + r, x, 'X');
                attroff(COLOR_PAIR(PAIR_BAD) | A_BOLD);
            } else if (cells >= level + 1) {
                attron(COLOR_PAIR(level_pair(v, e->d.limit)));
                put_ch(y + r, x, '#');
                attroff(COLOR_PAIR(level_pair(v, e->d.limit)));
            } else if (cells >= level + 0.5) {
                put_ch(y + r, x, '.');
            } else if (r == lim_row) {
                put_ch(y + r, x, '-');
            }
        }
        if (r == lim_row)
            put(y + r, 9 + (int)n + 1, "limit");
    }
    putf(y + h, 9, "usage, last %zu samples (X: refused request)", n);
    return y + h + 1;
}

static void hist_rows(const uint64_t *h, unsigned nb, bool lat, int y, int x,
                      int w, int rows)
{
    uint64_t max = 0;
    unsigned lo, hi;
    put(y, x, lat ? "allocation latency" : "allocation sizes");
    if (rows < 1 ||
        !gm_hist_window(h, nb, (unsigned)rows, &lo, &hi)) {
        put(y + 1, x, "(none yet)");
        return;
    }
    for (unsigned b = lo; b <= hi; b++)
        max = h[b] > max ? h[b] : max;
    for (unsigned b = lo; b <= hi && (int)(b - lo) < rows; b++) {
        char lab[24], ge[32];
        uint64_t v = b < 63 ? 1ull << b : UINT64_MAX;
        if (lat)
            latency(v, lab, sizeof lab);
        else
            gm_size_short(v, lab, sizeof lab);
        int bw = w - 20;
        snprintf(ge, sizeof ge, ">=%s", lab);
        put_cell(y + 1 + (int)(b - lo), x, 11, true, ge);
        if (bw > 2)
            bar(y + 1 + (int)(b - lo), x + 11, bw, h[b], max, PAIR_BAR);
        putf(y + 1 + (int)(b - lo), x + 12 + (bw > 2 ? bw : 0), "%llu",
             (unsigned long long)h[b]);
    }
}

/* One event line: time, kind, call, size, used after (and the limit of a
 * refusal). */
static void event_line(int y, const struct gm_abi_record *r)
{
    char size[16], used[16], lim[32] = "", when[16];
    time_t sec = (time_t)(r->ts_ns / 1000000000ull);
    struct tm tm;
    localtime_r(&sec, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    gm_size_short(r->size, size, sizeof size);
    gm_size_short(r->used_after, used, sizeof used);
    bool oom = r->kind == GM_EV_OOM;
    if (oom && r->extra) {
        char l[16];
        gm_size_short(r->extra, l, sizeof l);
        snprintf(lim, sizeof lim, " of %s", l);
    }
    if (oom)
        attron(COLOR_PAIR(PAIR_BAD) | A_BOLD);
    char kb[GM_ABI_NAME_CAP], ab[GM_ABI_NAME_CAP];
    putf(y, 0, "  %s.%03llu %-8s %-20s %8s  used %s%s", when,
         (unsigned long long)(r->ts_ns / 1000000 % 1000),
         gm_ev_kind_text(r->kind, kb, sizeof kb),
         gm_api_text(r->api, ab, sizeof ab), size, used, lim);
    if (oom)
        attroff(COLOR_PAIR(PAIR_BAD) | A_BOLD);
}

/* The last refusals (kept apart: later events push them out of the last
 * events), then the last events. */
static void event_rows(const struct gm_top_model *m, int y)
{
    int rows = LINES - 1 - y;
    if (m->nrefusals > 0 && rows >= 2 + (int)m->nrefusals) {
        put(y++, 0, "last refusals");
        for (size_t i = 0; i < m->nrefusals; i++)
            event_line(y++, &m->refusals[i]);
        rows = LINES - 1 - y;
    }
    if (rows < 2)
        return;
    putf(y++, 0, "last events%s", m->events_lost ? " (some lost)" : "");
    rows--;
    size_t from = m->nevents > (size_t)rows ? m->nevents - (size_t)rows : 0;
    for (size_t i = from; i < m->nevents; i++, y++)
        event_line(y, &m->events[i]);
}

static void draw_detail(const struct gm_top_model *m)
{
    const struct gm_top_ent *e = m->detail;
    if (e == NULL)
        return;
    clip_lines = LINES - 1;      /* the key line's */
    int y = detail_head(e, 0);
    /* The sparkline (h rows and its caption) as high as fits, 2 rows at
     * least, else none. */
    int spark_h = LINES >= 30 ? 8 : 5;
    spark_h = spark_h < LINES - 2 - y ? spark_h : LINES - 2 - y;
    y = sparkline(e, y, spark_h);
    int hist_h = LINES >= 30 ? 7 : 4;
    if (y + hist_h + 3 < LINES) {
        int half = COLS / 2;
        hist_rows(e->d.size_hist, GM_ABI_SIZE_BUCKETS, false, y, 0, half - 1,
                  hist_h);
        hist_rows(e->d.lat_hist, GM_ABI_LAT_BUCKETS, true, y, half, half - 1,
                  hist_h);
        y += hist_h + 1;
    }
    event_rows(m, y);
    clip_lines = LINES;
    put(LINES - 1, 0, "DETAIL  [Esc/Left/Backspace back  h help  q quit]");
}

/* ---- help screen --------------------------------------------------------------- */

static void draw_help(void)
{
    static const char *const lines[] = {
        "gpumem-top keys",
        "",
        "  q          quit (from every screen)",
        "  s / S      next sort column / reverse the sort order",
        "  d          show one device (card), cycling through them (then all)",
        "  j          show one job (Slurm job, pod, container), cycling",
        "             through those listed (then all)",
        "  /          filter rows by command text (Enter applies, Esc clears)",
        "  Up / Down  select a process",
        "  Enter      detail view of the selected process",
        "  Esc, Left  back to the table",
        "  h, ?       this help (q quits, any other key returns)",
        "",
        "Sizes are binary (K = 1024). % is used of the limit; in static",
        "mode (arena) how full the arena, charged whole, is. P99: the",
        "allocation latency below which 99% of calls completed. FRAG@PK:",
        "the fragmentation when the peak was last reached (the free space",
        "between live allocations not in its largest gap); the detail view",
        "also shows it now. TREND: the leak verdict, growth of the used",
        "floor per step (/st) or per second (/s), flat, or ? (too little",
        "history); ETA: time left before the limit at that growth.",
        "Dimmed rows: kept processes (GPUMEM_KEEP=1) and",
        "those that exited or were killed in the last 10 s, with their final",
        "figures. Group lines: a shared budget (GPUMEM_GROUP), its use",
        "against the group limit, each member as pid used/guaranteed share.",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        put((int)i, 0, lines[i]);
}

/* Under MIN_LINES: one line that says so, in the longest form that fits
 * (then cut at the width). */
static void too_small(void)
{
    char full[96];
    snprintf(full, sizeof full, "gpumem-top: terminal too small (%dx%d; "
             "%d lines needed); q quits", COLS, LINES, MIN_LINES);
    const char *forms[] = { full, "terminal too small; q quits",
                            "too small" };
    size_t k = 0;
    while (k + 1 < sizeof forms / sizeof forms[0] &&
           width_of(forms[k]) > COLS)
        k++;
    put(0, 0, forms[k]);
}

void gm_view_draw(const struct gm_top_model *m)
{
    erase();
    clip_lines = LINES;
    if (LINES < MIN_LINES)
        too_small();
    else if (m->screen == GM_SCR_HELP)
        draw_help();
    else if (m->screen == GM_SCR_DETAIL)
        draw_detail(m);
    else
        draw_table(m);
    refresh();
}
