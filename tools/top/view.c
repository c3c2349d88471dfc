/*
 * tools/top/view.c — drawing of `gpumem-top` with ncurses (see tools/top/view.h):
 * the device summary with bars, one line per shared budget (group) with
 * its bar and members, the process table, the detail view of one
 * process (usage sparkline with the limit line and OOM marks, size and
 * latency histograms, last events, policy) and the key help.
 *
 * Invariants: drawing only, from the model; each frame is erase() + draw
 * into the curses buffer + one refresh(), so the terminal gets only the
 * difference and never flickers; every write is clipped to the screen.
 * ASCII only, so any terminal and `tmux capture-pane` show it as drawn:
 * text from a segment (command, policy, group name) and the user name are
 * drawn in the terminal form of tools/lib/escape.h with GM_ESC_ASCII.
 */
#include "tools/top/view.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "policy/parse.h"
#include "shim/telemetry/report.h"
#include "tools/lib/escape.h"
#include "tools/lib/reader.h"
#include "tools/lib/util.h"

enum { PAIR_BAR = 1, PAIR_WARN, PAIR_BAD, PAIR_HEAD, PAIR_TITLE };

struct coldef {
    enum gm_top_col col;
    const char *name;
    int width;
    int prio;                    /* 0: always shown; higher: kept longer */
    bool left;
};

static const struct coldef cols[] = {
    { GM_COL_PID, "PID", 7, 0, false },
    { GM_COL_USER, "USER", 8, 1, true },
    { GM_COL_DEV, "DEV", 3, 0, false },
    { GM_COL_USED, "USED", 7, 0, false },
    { GM_COL_PEAK, "PEAK", 7, 8, false },
    { GM_COL_LIMIT, "LIMIT", 7, 0, false },
    { GM_COL_PCT, "%LIMIT", 11, 0, true },
    { GM_COL_ARATE, "ALLOC/s", 7, 0, false },
    { GM_COL_FRATE, "FREE/s", 7, 4, false },
    { GM_COL_OOMS, "OOMS", 5, 0, false },
    { GM_COL_FRAG, "FRAG", 6, 3, false },
    { GM_COL_P99, "P99", 8, 6, false },
    { GM_COL_MODE, "MODE", 6, 2, true },
    { GM_COL_CMD, "COMMAND", 10, 0, true },
};
#define NCOLS (sizeof cols / sizeof cols[0])

const char *gm_view_col_name(enum gm_top_col c)
{
    for (size_t i = 0; i < NCOLS; i++)
        if (cols[i].col == c)
            return cols[i].name;
    return "?";
}

int gm_view_open(void)
{
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

static void put(int y, int x, const char *s)
{
    if (y < 0 || y >= LINES || x >= COLS)
        return;
    mvaddnstr(y, x, s, COLS - x);
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
    if (limit == 0)
        return PAIR_BAR;
    if (used * 10 >= limit * 9)
        return PAIR_BAD;
    return used * 10 >= limit * 7 ? PAIR_WARN : PAIR_BAR;
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
        mvaddch(y, x + 1 + i, i < fill ? '#' : ' ');
    attroff(COLOR_PAIR(pair));
    put(y, x + w - 1, "]");
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

static int device_lines(const struct gm_top_model *m, int y)
{
    for (size_t i = 0; i < m->ndevs && y < LINES - 4; i++, y++) {
        const struct gm_top_devsum *d = &m->devs[i];
        char used[16], lim[16], phys[16];
        gm_size_short(d->used, used, sizeof used);
        gm_size_short(d->limits, lim, sizeof lim);
        gm_size_short(d->physical, phys, sizeof phys);
        uint64_t scale = d->physical ? d->physical : d->limits;
        int bw = COLS - 64 > 40 ? 40 : COLS - 64;
        putf(y, 0, "dev %-2d", d->dev);
        int x = 7;
        if (bw >= 5) {
            bar(y, x, bw, d->used, scale, level_pair(d->used, d->limits));
            x += bw + 1;
        }
        putf(y, x, "used %s  limits %s%s  physical %s  %u proc%s", used, lim,
             d->unlimited ? "+unlimited" : "", phys, d->procs,
             d->procs == 1 ? "" : "s");
    }
    if (m->ndevs == 0)
        put(y++, 0, "no device in use");
    return y;
}

/* "1951 464.0M/2.7G, 1952 ...": each member's use and guaranteed share. */
static void member_list(const struct gm_top_group *g, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < g->nmembers && k + 1 < cap; i++) {
        const struct gm_top_gmember *mb = &g->member[i];
        char used[16], share[16] = "-";
        gm_size_short(mb->used, used, sizeof used);
        if (g->limit)
            gm_size_short(mb->share, share, sizeof share);
        int n = snprintf(buf + k, cap - k, "%s%d%s %s/%s", i ? ", " : "",
                         mb->pid, mb->alive ? "" : "(dead)", used, share);
        if (n < 0)
            break;
        k += (size_t)n;
    }
}

/* One line per group and device: name, used/limit bar, members. */
static int group_lines(const struct gm_top_model *m, int y)
{
    for (size_t i = 0; i < m->ngroups && y < LINES - 4; i++, y++) {
        const struct gm_top_group *g = &m->groups[i];
        char used[16], lim[16] = "none", peak[16], pk[32] = "";
        char who[1024], dead[24] = "";
        gm_size_short(g->used, used, sizeof used);
        gm_size_short(g->peak, peak, sizeof peak);
        if (g->limit)
            gm_size_short(g->limit, lim, sizeof lim);
        member_list(g, who, sizeof who);
        if (g->dead)
            snprintf(dead, sizeof dead, " (+%u dead)", g->dead);
        char name[GM_ESC_TERM_CAP(sizeof g->name)];
        putf(y, 0, "group %-12.12s",
             gm_esc_term(g->name, GM_ESC_ASCII, name, sizeof name));
        /* Narrow terminals: a shorter bar and no peak, so that the
         * members still show. */
        bool wide = COLS >= 110;
        int x = 19, bw = wide ? 20 : 10;
        bar(y, x, bw, g->used, g->limit ? g->limit : g->physical,
            level_pair(g->used, g->limit));
        x += bw + 1;
        if (wide)
            snprintf(pk, sizeof pk, "  peak %s", peak);
        putf(y, x, "%s%sused %s / limit %s%s  %u member%s%s: %s",
             g->device, g->device[0] ? "  " : "", used, lim, pk, g->live,
             g->live == 1 ? "" : "s", dead, who);
    }
    return y;
}

/* Which columns fit in `width`: the mandatory ones, then by priority. */
static void pick_columns(int width, bool *show)
{
    int used = 0;
    for (size_t i = 0; i < NCOLS; i++) {
        show[i] = cols[i].prio == 0;
        if (show[i])
            used += cols[i].width + 1;
    }
    for (int p = 9; p >= 1; p--)
        for (size_t i = 0; i < NCOLS; i++)
            if (cols[i].prio == p && used + cols[i].width + 1 <= width) {
                show[i] = true;
                used += cols[i].width + 1;
            }
}

/* The command line without the directory of its program. */
static const char *short_cmd(const char *cmd)
{
    size_t prog = strcspn(cmd, " ");
    const char *p = cmd;
    for (size_t i = 0; i < prog; i++)
        if (cmd[i] == '/')
            p = cmd + i + 1;
    return p;
}

static void cell(const struct gm_top_ent *e, enum gm_top_col c, char *b,
                 size_t cap)
{
    const struct gm_abi_dev *d = &e->d;
    b[0] = '\0';
    switch (c) {
    case GM_COL_PID: snprintf(b, cap, "%d", e->pid); break;
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
        snprintf(b, cap, "%.1f%%", (double)d->frag_ppm / 10000.0);
        break;
    case GM_COL_P99:
        if (d->allocs)
            gm_format_latency(gm_dev_lat_q(d, 990), b, cap);
        else
            snprintf(b, cap, "-");
        break;
    case GM_COL_MODE: snprintf(b, cap, "%s", e->mode); break;
    case GM_COL_CMD:
        gm_esc_term(short_cmd(e->cmd), GM_ESC_ASCII, b, cap);
        break;
    default: break;
    }
}

static void pct_cell(int y, int x, const struct gm_top_ent *e)
{
    const struct gm_abi_dev *d = &e->d;
    if (d->limit == 0) {
        put(y, x, "   no limit");
        return;
    }
    uint64_t pct = d->used * 100 / d->limit;
    bar(y, x, 7, d->used, d->limit, level_pair(d->used, d->limit));
    putf(y, x + 7, "%3llu%%", (unsigned long long)(pct > 999 ? 999 : pct));
}

static void header_line(const struct gm_top_model *m, int y, const bool *show)
{
    int x = 0;
    attron(COLOR_PAIR(PAIR_HEAD) | A_BOLD);
    mvhline(y, 0, ' ', COLS);
    for (size_t i = 0; i < NCOLS; i++) {
        if (!show[i])
            continue;
        char name[24];
        snprintf(name, sizeof name, "%s%s", cols[i].name,
                 cols[i].col == m->sort ? (m->desc ? "v" : "^") : "");
        int w = cols[i].col == GM_COL_CMD ? COLS - x : cols[i].width;
        if (cols[i].left)
            putf(y, x, "%-*s", w, name);
        else
            putf(y, x, "%*s", w, name);
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
        mvhline(y, 0, ' ', COLS);
    for (size_t i = 0; i < NCOLS; i++) {
        if (!show[i])
            continue;
        char b[GM_ESC_TERM_CAP(GM_ABI_CMDLINE_LEN)];
        if (cols[i].col == GM_COL_PCT) {
            pct_cell(y, x, e);
        } else {
            cell(e, cols[i].col, b, sizeof b);
            if (cols[i].col == GM_COL_CMD && e->gone)
                putf(y, x, "(exited) %s", b);
            else if (cols[i].col == GM_COL_CMD)
                put(y, x, b);
            else if (cols[i].left)
                putf(y, x, "%-*.*s", cols[i].width, cols[i].width, b);
            else
                putf(y, x, "%*.*s", cols[i].width, cols[i].width, b);
        }
        x += cols[i].width + 1;
    }
    attroff(a);
}

static void status_line(const struct gm_top_model *m)
{
    char dev[16] = "all";
    if (m->dev_filter >= 0)
        snprintf(dev, sizeof dev, "%d", m->dev_filter);
    if (m->editing) {
        attron(A_BOLD);
        putf(LINES - 1, 0, "filter command: %s_", m->text_filter);
        attroff(A_BOLD);
        return;
    }
    putf(LINES - 1, 0, "sort: %s %s  dev: %s  filter: '%s'  "
         "[s/S sort  d dev  / filter  Enter detail  h help  q quit]",
         gm_view_col_name(m->sort), m->desc ? "desc" : "asc", dev,
         m->text_filter);
}

static void draw_table(const struct gm_top_model *m)
{
    bool show[NCOLS];
    title_line(m);
    int y = group_lines(m, device_lines(m, 1)) + 1;
    pick_columns(COLS, show);
    header_line(m, y++, show);
    int room = LINES - 1 - y;
    size_t first = 0;
    if (room > 0 && m->selected >= (size_t)room)
        first = m->selected - (size_t)room + 1;
    for (size_t i = first; i < m->nrows && y < LINES - 1; i++, y++)
        table_row(y, m->rows[i], show, i == m->selected);
    if (m->nrows == 0 && y < LINES - 1)
        put(y, 0, "no process is using the gpumem library under this "
            "prefix");
    status_line(m);
}

/* ---- detail screen ------------------------------------------------------------ */

static int detail_head(const struct gm_top_ent *e, int y)
{
    const struct gm_abi_dev *d = &e->d;
    char used[16], peak[16], lim[16] = "none", ctx[16], p50[24], p99[24];
    char text[GM_ESC_TERM_CAP(GM_ABI_CMDLINE_LEN)];
    gm_size_short(d->used, used, sizeof used);
    gm_size_short(d->peak, peak, sizeof peak);
    if (d->limit)
        gm_size_short(d->limit, lim, sizeof lim);
    gm_size_short(d->context_bytes, ctx, sizeof ctx);
    gm_format_latency(gm_dev_lat_q(d, 500), p50, sizeof p50);
    gm_format_latency(gm_dev_lat_q(d, 990), p99, sizeof p99);
    attron(A_BOLD | COLOR_PAIR(PAIR_TITLE));
    putf(y++, 0, "DETAIL  pid %d  device %d%s  %s", e->pid, e->dev,
         e->gone ? "  (exited)" : "",
         gm_esc_term(e->cmd, GM_ESC_ASCII, text, sizeof text));
    attroff(A_BOLD | COLOR_PAIR(PAIR_TITLE));
    putf(y++, 0, "used %s  peak %s  limit %s  context %s  allocs %llu  "
         "frees %llu  OOMs %llu  live %llu  frag %.1f%%", used, peak, lim,
         ctx, (unsigned long long)d->allocs, (unsigned long long)d->frees,
         (unsigned long long)d->refusals, (unsigned long long)d->live_allocs,
         (double)d->frag_ppm / 10000.0);
    putf(y++, 0, "alloc latency p50 %s p99 %s   %.0f allocs/s %.0f frees/s",
         p50, p99, e->arate, e->frate);
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
                mvaddch(y + r, x, 'X');
                attroff(COLOR_PAIR(PAIR_BAD) | A_BOLD);
            } else if (cells >= level + 1) {
                attron(COLOR_PAIR(level_pair(v, e->d.limit)));
                mvaddch(y + r, x, '#');
                attroff(COLOR_PAIR(level_pair(v, e->d.limit)));
            } else if (cells >= level + 0.5) {
                mvaddch(y + r, x, '.');
            } else if (r == lim_row) {
                mvaddch(y + r, x, '-');
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
    unsigned lo = nb, hi = 0;
    for (unsigned b = 0; b < nb; b++)
        if (h[b]) {
            max = h[b] > max ? h[b] : max;
            lo = b < lo ? b : lo;
            hi = b;
        }
    put(y, x, lat ? "allocation latency" : "allocation sizes");
    if (max == 0) {
        put(y + 1, x, "(none yet)");
        return;
    }
    if ((int)(hi - lo + 1) > rows)
        lo = hi + 1 - (unsigned)rows;
    for (unsigned b = lo; b <= hi && (int)(b - lo) < rows; b++) {
        char lab[24];
        uint64_t v = b < 63 ? 1ull << b : UINT64_MAX;
        if (lat)
            gm_format_latency(v, lab, sizeof lab);
        else
            gm_size_short(v, lab, sizeof lab);
        int bw = w - 20;
        putf(y + 1 + (int)(b - lo), x, ">=%-9s", lab);
        if (bw > 2)
            bar(y + 1 + (int)(b - lo), x + 11, bw, h[b], max, PAIR_BAR);
        putf(y + 1 + (int)(b - lo), x + 12 + (bw > 2 ? bw : 0), "%llu",
             (unsigned long long)h[b]);
    }
}

static void event_rows(const struct gm_top_model *m, int y)
{
    int rows = LINES - 1 - y;
    if (rows < 2)
        return;
    putf(y++, 0, "last events%s", m->events_lost ? " (some lost)" : "");
    rows--;
    size_t from = m->nevents > (size_t)rows ? m->nevents - (size_t)rows : 0;
    for (size_t i = from; i < m->nevents; i++, y++) {
        const struct gm_abi_record *r = &m->events[i];
        char size[16], used[16], when[16];
        time_t sec = (time_t)(r->ts_ns / 1000000000ull);
        struct tm tm;
        localtime_r(&sec, &tm);
        strftime(when, sizeof when, "%H:%M:%S", &tm);
        gm_size_short(r->size, size, sizeof size);
        gm_size_short(r->used_after, used, sizeof used);
        bool oom = r->kind == GM_EV_OOM;
        if (oom)
            attron(COLOR_PAIR(PAIR_BAD) | A_BOLD);
        putf(y, 0, "  %s.%03llu %-10s %-24s %8s  used %s", when,
             (unsigned long long)(r->ts_ns / 1000000 % 1000),
             gm_ev_kind_name(r->kind), gm_api_name(r->api), size, used);
        if (oom)
            attroff(COLOR_PAIR(PAIR_BAD) | A_BOLD);
    }
}

static void draw_detail(const struct gm_top_model *m)
{
    const struct gm_top_ent *e = m->detail;
    if (e == NULL)
        return;
    int y = detail_head(e, 0);
    int spark_h = LINES >= 30 ? 8 : 5;
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
    put(LINES - 1, 0, "DETAIL  [Esc/Left/Backspace back  h help  q quit]");
}

/* ---- help screen --------------------------------------------------------------- */

static void draw_help(void)
{
    static const char *const lines[] = {
        "gpumem-top keys",
        "",
        "  q          quit",
        "  s / S      next sort column / reverse the sort order",
        "  d          show one device, cycling through them (then all)",
        "  /          filter rows by command text (Enter applies, Esc clears)",
        "  Up / Down  select a process",
        "  Enter      detail view of the selected process",
        "  Esc, Left  back to the table",
        "  h, ?       this help (any key returns)",
        "",
        "Sizes are binary (K = 1024). % is used of the limit. P99 is the",
        "allocation latency below which 99% of calls completed. FRAG is",
        "the free space between live allocations not in its largest gap.",
        "Dimmed rows: processes that exited in the last 10 seconds.",
        "Group lines: a shared budget (GPUMEM_GROUP), its use against the",
        "group limit, and each member as pid used/guaranteed share.",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        put((int)i, 0, lines[i]);
}

void gm_view_draw(const struct gm_top_model *m)
{
    erase();
    if (m->screen == GM_SCR_HELP)
        draw_help();
    else if (m->screen == GM_SCR_DETAIL)
        draw_detail(m);
    else
        draw_table(m);
    refresh();
}
