package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
)

// countNotifier signals every delivery.
type countNotifier struct{ done chan struct{} }

func (c countNotifier) Notify(context.Context, ...*model.Alert) (bool, error) {
	c.done <- struct{}{}
	return false, nil
}

// BenchmarkPipeline measures one notification end to end: an alert handed
// to Notify, grouped (group_wait 0), written to the outbox (one bbolt
// transaction with fsync), delivered and removed (a second transaction).
// ns/op is the delivery latency when notifications arrive back to back.
func BenchmarkPipeline(b *testing.B) {
	for _, parallel := range []int{1, 16} {
		b.Run(fmt.Sprintf("groups=%d", parallel), func(b *testing.B) {
			c := countNotifier{done: make(chan struct{}, 1024)}
			rc := notify.DefaultRoute()
			rc.Receiver, rc.GroupWait, rc.GroupBy = "team", 0, []string{notify.GroupByAll}
			d := newDispatcher(b, dispatcherOpts{dir: b.TempDir(), route: rc, capacity: 1 << 20}, c)
			defer d.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i += parallel {
				var batch []*model.Alert
				for j := 0; j < parallel && i+j < b.N; j++ {
					batch = append(batch, firing("Bench", fmt.Sprint(i+j), start.Add(-time.Hour)))
				}
				d.Notify(ctx, batch...)
				for range batch {
					<-c.done
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "notifications/s")
			cancel()
			<-done
		})
	}
}
