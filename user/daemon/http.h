/* http.h - one HTTP POST, as the spool's uploader sends a profile.
 *
 * Two transports behind one call, chosen when the program is built:
 *  - the dynamic build loads libcurl (libcurl.so.4) when a spool opens: with
 *    its TLS, LDAP and Kerberos libraries it would add about 10 MB to the RSS
 *    of every run, pushing or not;
 *  - the static build (PYPERF_STATIC) cannot load a shared library (a second
 *    C library would come with it), and links no libcurl of its own: it runs
 *    the host's curl program, once per POST, with the body on its standard
 *    input.  One POST per profile interval, so the fork costs nothing that
 *    counts; TLS, proxies and CA certificates are the host's own.
 * Either way the answer is the HTTP status, and for gRPC the grpc-status and
 * grpc-message of the headers or trailers. */
#ifndef PYPERF_HTTP_H
#define PYPERF_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_TIMEOUT_S 20
#define HTTP_CONNECT_TIMEOUT_S 5

struct http;

struct http_answer {
	long status;                 /* the HTTP status */
	int grpc_code;               /* -1: no grpc-status seen */
	char grpc_message[128];
};

/* Ready the transport (load libcurl, or find curl on PATH); 0, or -1 with a
 * one-line reason in err. */
int http_init(char *err, size_t errlen);
/* A connection context for one thread; NULL if out of memory. */
struct http *http_new(void);
void http_free(struct http *h);
/* POST body to url with the given "Name: value" headers (NULL-terminated);
 * grpc: HTTP/2 (prior knowledge on http:, by ALPN on https:) and a fresh
 * connection.  0 if an answer came (in a), -1 if none did (why says why). */
int http_post(struct http *h, const char *url, const char *const *headers, const void *body,
	      size_t len, bool grpc, struct http_answer *a, char *why, size_t whylen);

#endif
