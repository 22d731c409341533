/*
 * The readers of bench/collab: `count` idle y-websocket clients on one document, in one process on
 * one thread (epoll), as cheap per frame as a client can be, so the two cores of the bench machine
 * go to the server under test and not to its clients (which, in use, run on other machines).
 * Each socket does the WebSocket upgrade, then parses the server's frames in place (unmasked, as
 * servers send them) and records, for its k-th y-websocket update frame (binary, payload 0, 2, ...),
 * the CLOCK_MONOTONIC time in ms (the clock of Node's process.hrtime, which the writer uses).
 *
 *   collab-reader <host> <port> <path?query> <count> <total> <times-file> [hocuspocus-document]
 *
 * With a Hocuspocus document name, each socket speaks Hocuspocus's multiplexed form of the same
 * protocol: it first sends the Auth message for that document (document name, type 2, token
 * submessage 0, an empty token), and every frame the server sends starts with the document name,
 * which is skipped before the y-websocket payload is read.
 *
 * stdout: "open" once every socket is upgraded; then commands on stdin: "count" answers
 * "count <frames delivered>", "report" writes count x total doubles (NaN: not received) to
 * <times-file>, answers "report" and exits. Built by bench/collab.ts with the system's cc.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  int fd;
  int upgraded;
  unsigned char *buf;
  size_t len, cap;
  size_t k; /* update frames seen */
} reader;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "collab-reader: %s: %s\n", what, strerror(errno));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: collab-reader host port path count total times-file [hocuspocus-document]\n");
    return 2;
  }
  const char *hdoc = argc == 8 ? argv[7] : NULL;
  size_t hlen = hdoc ? strlen(hdoc) : 0;
  if (hlen > 100) {
    fprintf(stderr, "collab-reader: document name too long\n");
    return 2;
  }
  /* the Hocuspocus Auth message, as a masked client frame (mask 0: the payload as it is) */
  unsigned char auth[128];
  size_t authlen = 0;
  if (hdoc) {
    size_t plen = 1 + hlen + 3;
    auth[authlen++] = 0x82;
    auth[authlen++] = 0x80 | (unsigned char)plen;
    for (int j = 0; j < 4; j++) auth[authlen++] = 0;
    auth[authlen++] = (unsigned char)hlen;
    memcpy(auth + authlen, hdoc, hlen);
    authlen += hlen;
    auth[authlen++] = 2; /* Auth */
    auth[authlen++] = 0; /* token */
    auth[authlen++] = 0; /* an empty token */
  }
  const char *host = argv[1], *path = argv[3], *out = argv[6];
  int port = atoi(argv[2]);
  size_t count = strtoul(argv[4], NULL, 10), total = strtoul(argv[5], NULL, 10);
  reader *rs = calloc(count, sizeof(reader));
  double *times = malloc(sizeof(double) * count * total);
  for (size_t i = 0; i < count * total; i++) times[i] = NAN;
  int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  char req[8192];
  int reqlen = snprintf(req, sizeof req,
                        "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                        path, host, port);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, host, &addr.sin_addr);

  /* connect and upgrade in batches of 50 (blocking connect and request; the answer comes by epoll) */
  size_t opened = 0, upgraded = 0;
  unsigned long long delivered = 0;
  struct epoll_event evs[256];
  while (upgraded < count) {
    while (opened < count && opened - upgraded < 50) {
      reader *r = &rs[opened];
      r->fd = socket(AF_INET, SOCK_STREAM, 0);
      if (r->fd < 0) die("socket");
      int one = 1;
      setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (connect(r->fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
      if (write(r->fd, req, reqlen) != reqlen) die("write");
      fcntl(r->fd, F_SETFL, O_NONBLOCK);
      r->cap = 65536;
      r->buf = malloc(r->cap);
      struct epoll_event ev = {.events = EPOLLIN, .data.u64 = opened};
      if (epoll_ctl(ep, EPOLL_CTL_ADD, r->fd, &ev) < 0) die("epoll_ctl");
      opened++;
    }
    int n = epoll_wait(ep, evs, 256, 10000);
    if (n <= 0) {
      fprintf(stderr, "collab-reader: upgrades stalled at %zu of %zu\n", upgraded, count);
      return 1;
    }
    for (int i = 0; i < n; i++) {
      reader *r = &rs[evs[i].data.u64];
      ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len);
      if (got <= 0) {
        fprintf(stderr, "collab-reader: socket closed during the upgrade\n");
        return 1;
      }
      r->len += got;
      if (r->upgraded) continue;
      unsigned char *end = memmem(r->buf, r->len, "\r\n\r\n", 4);
      if (!end) continue;
      if (r->len < 12 || memcmp(r->buf + 9, "101", 3) != 0) {
        fprintf(stderr, "collab-reader: upgrade refused: %.*s\n", (int)(end - r->buf), r->buf);
        return 1;
      }
      size_t head = end + 4 - r->buf;
      memmove(r->buf, r->buf + head, r->len - head);
      r->len -= head;
      r->upgraded = 1;
      upgraded++;
      if (hdoc && write(r->fd, auth, authlen) != (ssize_t)authlen) die("write auth");
    }
  }
  /* frames already buffered during the upgrades are parsed with the first read below */
  struct epoll_event in = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in) < 0) die("epoll_ctl stdin");
  printf("open\n");
  fflush(stdout);

  char cmd[64];
  size_t cmdlen = 0;
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    double t = now_ms();
    for (int i = 0; i < n; i++) {
      if (evs[i].data.u64 == UINT64_MAX) {
        ssize_t got = read(0, cmd + cmdlen, sizeof cmd - 1 - cmdlen);
        if (got <= 0) return 0; /* the bench went away */
        cmdlen += got;
        char *nl;
        while ((nl = memchr(cmd, '\n', cmdlen))) {
          *nl = 0;
          if (strcmp(cmd, "count") == 0) {
            printf("count %llu\n", delivered);
            fflush(stdout);
          } else if (strcmp(cmd, "report") == 0) {
            FILE *f = fopen(out, "wb");
            if (!f || fwrite(times, sizeof(double), count * total, f) != count * total || fclose(f) != 0) die("times file");
            printf("report\n");
            fflush(stdout);
            return 0;
          }
          size_t used = nl + 1 - cmd;
          memmove(cmd, nl + 1, cmdlen - used);
          cmdlen -= used;
        }
        continue;
      }
      size_t id = evs[i].data.u64;
      reader *r = &rs[id];
      for (;;) {
        if (r->len == r->cap) r->buf = realloc(r->buf, r->cap *= 2);
        ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (got <= 0) {
          epoll_ctl(ep, EPOLL_CTL_DEL, r->fd, NULL);
          close(r->fd);
          break;
        }
        r->len += got;
      }
      size_t at = 0;
      while (r->len - at >= 2) {
        unsigned char *b = r->buf + at;
        uint64_t plen = b[1] & 0x7f;
        size_t head = 2;
        if (plen == 126) {
          if (r->len - at < 4) break;
          plen = ((uint64_t)b[2] << 8) | b[3];
          head = 4;
        } else if (plen == 127) {
          if (r->len - at < 10) break;
          plen = 0;
          for (int j = 0; j < 8; j++) plen = (plen << 8) | b[2 + j];
          head = 10;
        }
        if (r->len - at < head + plen) break;
        /* Hocuspocus: the payload starts with the document name (one length byte, then the name) */
        size_t skip = hdoc ? 1 + hlen : 0;
        if ((b[0] & 0x0f) == 2 && plen >= skip + 2 && b[head + skip] == 0 && b[head + skip + 1] == 2) {
          if (r->k < total) times[id * total + r->k] = t;
          r->k++;
          delivered++;
        }
        at += head + plen;
      }
      memmove(r->buf, r->buf + at, r->len - at);
      r->len -= at;
    }
  }
}
