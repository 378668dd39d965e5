/* dlog.h - the daemon's log: one line per message, to stderr or a file.
 *
 * Under systemd (JOURNAL_STREAM set and logging to stderr) each line starts
 * with a syslog priority "<N>" that journald reads as the message's level;
 * otherwise with a UTC time stamp.  A log file is opened for appending and
 * reopened by dlog_reopen (SIGHUP, after logrotate moved it).  Lines from
 * several threads do not interleave. */
#ifndef PYPERF_DLOG_H
#define PYPERF_DLOG_H

enum dlog_level { DLOG_ERR = 3, DLOG_WARN = 4, DLOG_INFO = 6 };

/* Log to path (NULL: stderr); 0, or -1 with errno if it cannot be opened. */
int dlog_open(const char *path);
int dlog_reopen(void);
void dlog(enum dlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
