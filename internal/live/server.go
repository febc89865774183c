package live

import (
	"context"
	"embed"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tunebench/tunebench/internal/errs"
)

// DefaultHost is where a --listen value without a host binds: the live
// view is served on this machine only unless another address is given.
const DefaultHost = "127.0.0.1"

// ResolveAddr turns a --listen value into the address to bind: a port
// alone ("9100" or ":9100") binds the loopback address (127.0.0.1:9100);
// a host and a port ("0.0.0.0:9100", "192.0.2.7:9100", "[::1]:9100",
// "localhost:9100") bind there. Port 0 takes a free port.
func ResolveAddr(s string) (string, error) {
	v := strings.TrimSpace(s)
	bad := func(why string) error {
		return errs.Usage("give a port (--listen 9100: this machine only, 127.0.0.1:9100) or a host and a port (--listen 0.0.0.0:9100: every interface)",
			"--listen %q is not an address to serve the live view on: %s", s, why)
	}
	if v == "" {
		return "", bad("it is empty")
	}
	if net.ParseIP(v) != nil {
		return "", bad("an address needs a port too (" + net.JoinHostPort(v, "9100") + ")")
	}
	host, port := "", v
	if strings.Contains(v, ":") {
		var err error
		if host, port, err = net.SplitHostPort(v); err != nil {
			return "", bad(strings.TrimPrefix(err.Error(), "address "+v+": "))
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || port == "" {
		return "", bad("the port must be a number from 0 to 65535")
	}
	if host == "" {
		host = DefaultHost
	}
	if strings.ContainsAny(host, " /") {
		return "", bad("the host must be an IP address or a host name")
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// Server serves a Hub over HTTP: / (the live page), /metrics
// (Prometheus) and /api/live (the page's JSON).
type Server struct {
	hub  *Hub
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr (a --listen value, ResolveAddr) and serves hub on it
// until Close. The errors say what to do: another port when the address
// is in use, another host when it is not this machine's.
func Listen(addr string, hub *Hub) (*Server, error) {
	a, err := ResolveAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		return nil, listenError(addr, a, err)
	}
	s := &Server{hub: hub, ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: hub.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func listenError(given, addr string, err error) error {
	_, port, _ := net.SplitHostPort(addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		next := "9101"
		if n, e := strconv.Atoi(port); e == nil && n > 0 && n < 65535 {
			next = strconv.Itoa(n + 1)
		}
		return errs.Wrap(errs.KindUsage, err,
			"another program (another tunebench --listen?) serves on that port: give another one (--listen "+next+"), or stop it (ss -ltnp 'sport = :"+port+"' names it)",
			"cannot serve the live view on %s: the address is in use", addr)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return errs.Wrap(errs.KindUsage, err,
			"give an address of this machine (ip -brief address lists them), 0.0.0.0 for every interface, or a port alone for 127.0.0.1",
			"cannot serve the live view on %s: the address is not one of this machine's", addr)
	case errors.Is(err, syscall.EACCES):
		return errs.Wrap(errs.KindUsage, err, "give a port from 1024 up (e.g. --listen 9100)",
			"cannot serve the live view on %s: ports below 1024 need privileges", addr)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return errs.Wrap(errs.KindUsage, err, "give an IP address of this machine, or a port alone for 127.0.0.1",
			"cannot serve the live view on %q: the host name does not resolve", given)
	}
	return errs.Wrap(errs.KindUsage, err, "give another address (--listen PORT serves on 127.0.0.1)", "cannot serve the live view on %s", addr)
}

// Addr is the bound address (with the port chosen for port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the live page's URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Close stops serving: requests under way get until ctx's end to finish.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}

//go:embed page
var pageFS embed.FS

// Handler serves the hub: / (the live page), /metrics, /api/live.
func (h *Hub) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /api/live", h.serveJSON)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		b, err := pageFS.ReadFile("page/index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// Nothing but this page's own script and style: no external asset.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:")
		_, _ = w.Write(b)
	})
	return mux
}
