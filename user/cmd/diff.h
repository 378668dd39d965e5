/* diff.h - the `diff` command: two recordings compared. */
#ifndef PYPERF_DIFF_H
#define PYPERF_DIFF_H

int diff_main(int argc, char **argv);

#endif
