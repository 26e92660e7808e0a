package output

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The sets holding temporaries. While there is one, SIGINT and SIGTERM
// are caught: the handler removes every set's temporaries and ends the
// process with status 128 + the signal number (130, 143), as a shell
// reports a process killed by it. Signal handling is per process, hence
// this one package-level registry.
var live struct {
	sync.Mutex
	sets map[*Set]bool
	ch   chan os.Signal
}

func register(s *Set) {
	live.Lock()
	defer live.Unlock()
	if live.sets == nil {
		live.sets = map[*Set]bool{}
	}
	live.sets[s] = true
	if live.ch == nil {
		live.ch = make(chan os.Signal, 1)
		signal.Notify(live.ch, os.Interrupt, syscall.SIGTERM)
		go onSignal(live.ch)
	}
}

// unregister forgets s; the caller holds s.mu.
func unregister(s *Set) {
	live.Lock()
	defer live.Unlock()
	delete(live.sets, s)
	if len(live.sets) == 0 && live.ch != nil {
		signal.Stop(live.ch)
		close(live.ch)
		live.ch = nil
	}
}

func onSignal(ch chan os.Signal) {
	sig, ok := <-ch
	if !ok {
		return
	}
	live.Lock()
	sets := make([]*Set, 0, len(live.sets))
	for s := range live.sets {
		sets = append(sets, s)
	}
	live.Unlock()
	for _, s := range sets {
		s.Abort() // waits for a Commit in progress to finish
	}
	code := 130
	if n, ok := sig.(syscall.Signal); ok {
		code = 128 + int(n)
	}
	os.Exit(code)
}
