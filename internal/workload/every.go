package workload

import (
	"sync"
	"time"
)

// Every calls f every d (a loader's progress line) until the returned stop
// is called; stop may be called more than once and returns after f's last
// call.
func Every(d time.Duration, f func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tk.C:
				f()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}
