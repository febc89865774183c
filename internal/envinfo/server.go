package envinfo

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
)

// RTTSamples is how many `SELECT 1` round trips measure the network
// between the driver and the server before a run.
const RTTSamples = 20

// Server is where the database server is, seen from the driver: the
// network between them is part of every latency a run measures.
type Server struct {
	// Address is inet_server_addr():inet_server_port() (empty over a Unix
	// socket).
	Address string `json:"address,omitempty"`
	// Remote: the server is on another machine. The snapshot's host, and
	// the run's CPU, memory and network series, are then the driver's
	// machine; the server's host is not measured.
	Remote bool `json:"remote"`
	// RTTMs is the median round trip of RTTSamples `SELECT 1`, taken
	// before the run.
	RTTMs      float64 `json:"rtt_ms"`
	RTTSamples int     `json:"rtt_samples"`
}

// ServerInfo reads the server's address and measures the round trip.
func ServerInfo(ctx context.Context, conn Querier, remote bool) (*Server, error) {
	s := &Server{Remote: remote}
	var addr *string
	var port *int
	if err := conn.QueryRow(ctx, "SELECT host(inet_server_addr()), inet_server_port()").Scan(&addr, &port); err != nil {
		return nil, err
	}
	if addr != nil && port != nil {
		s.Address = net.JoinHostPort(*addr, strconv.Itoa(*port))
	}
	rtts := make([]time.Duration, 0, RTTSamples)
	for range RTTSamples {
		var one int
		t0 := time.Now()
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	mid := len(rtts) / 2
	median := (rtts[mid-1] + rtts[mid]) / 2
	s.RTTMs, s.RTTSamples = float64(median.Microseconds())/1000, len(rtts)
	return s, nil
}

// Where says where the server is ("" without a record).
func (s *Server) Where() string {
	if s == nil {
		return ""
	}
	where := "on this machine"
	if s.Remote {
		where = "on another machine"
	}
	if s.Address != "" {
		where += " at " + s.Address
	} else if !s.Remote {
		where += " (Unix socket)"
	}
	return where
}

// Line says where the server is and the round trip to it, in one line (""
// without a record).
func (s *Server) Line() string {
	if s == nil {
		return ""
	}
	v := fmt.Sprintf("%s, round trip %.3f ms (median of %d SELECT 1)", s.Where(), s.RTTMs, s.RTTSamples)
	if s.Remote {
		v += "; the host rows are the driver's machine (the server host's series, when measured, are the run's server.* series)"
	}
	return v
}
