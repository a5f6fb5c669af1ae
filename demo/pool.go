package demo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// errQueueFull is returned by submit when the bounded queue has no room.
var errQueueFull = errors.New("queue full")

// job is one request waiting for a worker. The worker runs fn unless ctx has
// already expired (the client gave up), then closes done.
type job struct {
	ctx  context.Context
	fn   func(ctx context.Context)
	done chan struct{}
	// ran is set before done is closed when fn was run to completion.
	ran bool
}

// pool is a fixed set of worker goroutines of which only the first `active`
// take jobs; the others stay parked. Shrinking the active count is how the
// pool-shrink fault reproduces "the application could not start enough
// threads": requests wait in the queue while the machine is idle.
type pool struct {
	size   int
	queue  chan *job
	active atomic.Int32
	// busy counts workers running a job.
	busy atomic.Int32

	mu sync.Mutex
	// resized is closed (and replaced) on every resize, waking parked
	// workers so that they re-read the active count.
	resized chan struct{}
}

func newPool(size, queueSize int) *pool {
	p := &pool{
		size:    size,
		queue:   make(chan *job, queueSize),
		resized: make(chan struct{}),
	}
	p.active.Store(int32(size))
	return p
}

// setActive changes how many workers take jobs, clamped to [1, size]. A
// worker above the new count finishes its current job and then parks.
func (p *pool) setActive(n int) {
	n = max(1, min(n, p.size))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active.Store(int32(n))
	close(p.resized)
	p.resized = make(chan struct{})
}

func (p *pool) resizedCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resized
}

// submit queues j without blocking.
func (p *pool) submit(j *job) error {
	select {
	case p.queue <- j:
		return nil
	default:
		return errQueueFull
	}
}

// queued is the number of jobs waiting for a worker, including jobs whose
// client has already given up (as in a listen backlog).
func (p *pool) queued() int { return len(p.queue) }

// run starts the workers and returns when ctx is done and all of them have
// exited.
func (p *pool) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range p.size {
		wg.Go(func() { p.work(ctx, int32(i)) })
	}
	wg.Wait()
	// Release requests still queued so that their handlers answer at once.
	for {
		select {
		case j := <-p.queue:
			close(j.done)
		default:
			return
		}
	}
}

func (p *pool) work(ctx context.Context, id int32) {
	for {
		// Read the channel before the count so that a resize in between
		// still wakes this worker.
		resized := p.resizedCh()
		if id >= p.active.Load() {
			select {
			case <-resized:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case j := <-p.queue:
			p.runJob(j)
		case <-resized:
		case <-ctx.Done():
			return
		}
	}
}

func (p *pool) runJob(j *job) {
	defer close(j.done)
	if j.ctx.Err() != nil {
		return // the client gave up while queued: no work
	}
	p.busy.Add(1)
	defer p.busy.Add(-1)
	j.fn(j.ctx)
	j.ran = true
}
