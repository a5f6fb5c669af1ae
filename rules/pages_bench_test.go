package rules

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seismo-agent/seismo/internal/model"
)

// pageCase is a change BenchmarkPagesAfterChange makes to a daily cycle
// on its fourth day: change returns the changed value of x, whose noise
// draw is noise and sine of the time of day sin, k samples into the
// change of a day of perDay samples; days is how long it lasts (0: for
// good).
type pageCase struct {
	name   string
	change func(x, noise, sin float64, k, perDay int) float64
	days   float64
}

var pageCases = []pageCase{
	{"doubled", func(x, _, _ float64, _, _ int) float64 { return 2 * x }, 0},
	{"halved", func(x, _, _ float64, _, _ int) float64 { return x / 2 }, 0},
	{"x1.3", func(x, _, _ float64, _, _ int) float64 { return 1.3 * x }, 0},
	{"noise_x3", func(_, noise, sin float64, _, _ int) float64 { return 100 * (1 + 0.3*sin) * (1 + 0.09*noise) }, 0},
	{"rise_half_a_day", func(x, _, _ float64, k, perDay int) float64 { return x * (1 + 0.5*min(float64(k)/float64(perDay), 1)) }, 0},
	{"stuck", func(float64, float64, float64, int, int) float64 { return 100 }, 0},
	{"doubled_30m", func(x, _, _ float64, _, _ int) float64 { return 2 * x }, 30.0 / 1440},
	{"x1.5_1h", func(x, _, _ float64, _, _ int) float64 { return 1.5 * x }, 1.0 / 24},
	{"x1.5_2h", func(x, _, _ float64, _, _ int) float64 { return 1.5 * x }, 2.0 / 24},
	{"noise_x3_1h", func(_, noise, sin float64, _, _ int) float64 { return 100 * (1 + 0.3*sin) * (1 + 0.09*noise) }, 1.0 / 24},
	{"none", func(x, _, _ float64, _, _ int) float64 { return x }, 0},
}

// BenchmarkPagesAfterChange counts the pages an `auto` rule (defaults)
// raises over the two days after a change to a daily cycle (±30 %, noise
// 3 %), on its fourth day, three seeds, at 15 s, a minute and 5 minutes:
// pages (after the change), pages_before (false alarms on the three days
// before) and, for a change that ends, resolve_min (the mean minutes from
// its end to the resolve of the alerts firing then). The figures of
// docs/detectors.md "A change that lingers":
//
//	go test ./rules -run '^$' -bench PagesAfterChange -benchtime 1x
func BenchmarkPagesAfterChange(b *testing.B) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	for _, step := range []time.Duration{15 * time.Second, time.Minute, 5 * time.Minute} {
		for _, pc := range pageCases {
			b.Run(step.String()+"/"+pc.name, func(b *testing.B) {
				var pages, before, resolves int
				var resolveMin float64
				for range b.N {
					pages, before, resolves, resolveMin = 0, 0, 0, 0
					for seed := uint64(1); seed <= 3; seed++ {
						p, bf, rs, rm := pagesAfterChange(b, lset, step, pc, seed)
						pages, before, resolves, resolveMin = pages+p, before+bf, resolves+rs, resolveMin+rm
					}
				}
				b.ReportMetric(float64(pages), "pages")
				b.ReportMetric(float64(before), "pages_before")
				if pc.days > 0 && resolves > 0 {
					b.ReportMetric(resolveMin/float64(resolves), "resolve_min")
				}
			})
		}
	}
}

// pagesAfterChange runs one seed of pc at step through an `auto` rule:
// the pages after the change and before it, and the alerts that resolved
// after a change that ends, with the sum of their minutes from its end.
func pagesAfterChange(b *testing.B, lset labels.Labels, step time.Duration, pc pageCase, seed uint64) (pages, before, resolves int, resolveMin float64) {
	perDay := int(24 * time.Hour / step)
	from, until := 3*perDay, math.MaxInt
	if pc.days > 0 {
		until = from + int(pc.days*float64(perDay))
	}
	rng := rand.New(rand.NewPCG(seed, 6))
	vals := make([]float64, from+2*perDay)
	for i := range vals {
		sin := math.Sin(2 * math.Pi * float64(i) / float64(perDay))
		noise := rng.NormFloat64()
		vals[i] = 100 * (1 + 0.3*sin) * (1 + 0.03*noise)
		if i >= from && i < until {
			vals[i] = pc.change(vals[i], noise, sin, i-from, perDay)
		}
	}
	i := 0
	rec := &recorder{}
	m := autoQueueRule(b, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
	defer m.Close()
	end := t0.Add(time.Duration(until) * step)
	var lastStart, lastEnd time.Time
	for ; i < len(vals); i++ {
		if err := m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*step)); err != nil {
			b.Fatal(err)
		}
		for _, a := range rec.take() {
			switch {
			case a.State == model.StateFiring && !a.StartsAt.Equal(lastStart):
				lastStart = a.StartsAt
				if i < from {
					before++
				} else {
					pages++
				}
			case a.State == model.StateResolved && !a.EndsAt.Equal(lastEnd):
				lastEnd = a.EndsAt
				if pc.days > 0 && a.EndsAt.After(end) && a.StartsAt.Before(end) {
					resolves++
					resolveMin += a.EndsAt.Sub(end).Minutes()
				}
			}
		}
	}
	return pages, before, resolves, resolveMin
}
