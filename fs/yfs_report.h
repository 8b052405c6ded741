/* yfs_report.h — the JSON files under .youmufs/ and the log.
 *
 * index.json: what was indexed (dataset, column, files, row groups, pages,
 * rows, records, epoch size, options) and how long it took. stats.json: the
 * live counters of yfs_stats plus derived figures. Both are rendered fresh on
 * every call, as a NUL-terminated malloc'ed string (caller frees), NULL on
 * allocation failure.
 */
#ifndef YFS_REPORT_H
#define YFS_REPORT_H

#include "yfs_mount.h"

char *yfs_index_json(yfs_mount *m);
char *yfs_stats_json(yfs_mount *m);

/* Log a read-time problem: to stderr in the foreground, to syslog once
 * daemonized (stderr is gone then). */
void yfs_log(const yfs_mount *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
