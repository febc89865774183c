package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer for writers on several goroutines (a run's
// clients, progress ticks, a server's log lines) read by the test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
