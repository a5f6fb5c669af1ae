package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/seismo-agent/seismo/demo"
	"github.com/seismo-agent/seismo/demo/loadgen"
)

// demoHelp is the help of the "demo" parent command.
const demoHelp = "Run the demo service and load generator that replay the outages seismo catches."

func registerDemo(app *kingpin.Application, cli *cliEnv) {
	parent := cli.command(app, "demo", demoHelp)
	registerDemoRun(parent, cli)
	registerDemoService(parent, cli)
	registerDemoLoad(parent, cli)
}

func registerDemoService(parent *kingpin.CmdClause, cli *cliEnv) {
	cmd := parent.Command("service", "Serve the demo web application, instrumented for the built-in rule pack, with fault switches at POST /admin/fault?name=...&on=1.")
	listen := cmd.Flag("listen", "host:port to serve on.").Default("127.0.0.1:8080").String()
	var o demo.Options
	cmd.Flag("workers", "Worker pool size.").Default("8").IntVar(&o.Workers)
	cmd.Flag("shrunk-workers", "Workers left under the pool-shrink fault.").Default("1").IntVar(&o.ShrunkWorkers)
	cmd.Flag("queue-size", "Requests that may wait for a worker; beyond, 503.").Default("64").IntVar(&o.QueueSize)
	cmd.Flag("timeout", "Per-request deadline for queueing plus work; past it, 504.").Default("1s").DurationVar(&o.Timeout)
	cmd.Flag("cpu-work", "CPU time per uncacheable request.").Default("2ms").DurationVar(&o.CPUWork)
	cmd.Flag("backend-wait", "Time an uncacheable request holds its worker waiting on a backend.").Default("100ms").DurationVar(&o.BackendWait)
	cmd.Flag("client-rate", "Per-client rate limit in requests per second (negative: off).").Default("5").Float64Var(&o.ClientRate)
	cmd.Flag("client-burst", "Per-client burst.").Default("10").IntVar(&o.ClientBurst)
	cmd.Flag("limiter-clear-every", "How often the limiter table is cleared under limiter-global.").Default("5s").DurationVar(&o.LimiterClearEvery)
	faults := cmd.Flag("fault", "Fault to switch on at start (pool-shrink, limiter-global); repeatable.").Strings()
	cmd.Action(cli.action(func(ctx context.Context) error {
		o.Logger = cli.logger
		svc, err := demo.NewService(o)
		if err != nil {
			return err
		}
		for _, name := range *faults {
			f, err := demo.ParseFault(name)
			if err != nil {
				return err
			}
			if err := svc.SetFault(f, true); err != nil {
				return err
			}
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("demo service: %w", err)
		}
		fmt.Fprintf(cli.stdout, "demo service on http://%s (metrics at %s, faults at %s)\n", ln.Addr(), demo.RouteMetrics, demo.RouteAdminFault)
		return svc.Serve(ctx, ln)
	}))
}

func registerDemoLoad(parent *kingpin.CmdClause, cli *cliEnv) {
	cmd := parent.Command("load", "Send load from many clients at the demo service, following a compressed day, with an optional surge; stops by itself.")
	var o loadgen.Options
	cmd.Flag("target", "Base URL of the demo service.").Default("http://127.0.0.1:8080").StringVar(&o.Target)
	cmd.Flag("clients", "Number of client IDs.").Default("50").IntVar(&o.Clients)
	cmd.Flag("rate", "Mean request rate (req/s).").Default("50").Float64Var(&o.Curve.Base)
	cmd.Flag("day", "Length of one compressed day of traffic (0: flat).").Default("2m").DurationVar(&o.Curve.DayLength)
	cmd.Flag("amplitude", "Day swing as a fraction of the rate.").Default("0.3").Float64Var(&o.Curve.Amplitude)
	cmd.Flag("duration", "Run time.").Default("1m").DurationVar(&o.Duration)
	cmd.Flag("max-requests", "Stop after this many requests (0: no bound).").Int64Var(&o.MaxRequests)
	cmd.Flag("surge-at", "Start a surge this long after the start (0: no surge).").DurationVar(&o.Curve.Surge.Start)
	cmd.Flag("surge-factor", "Surge rate multiplier.").Default("5").Float64Var(&o.Curve.Surge.Factor)
	cmd.Flag("surge-ramp", "Time for the surge to reach its factor.").Default("20s").DurationVar(&o.Curve.Surge.Ramp)
	cmd.Flag("surge-hold", "How long the surge holds before ramping down (0: to the end).").DurationVar(&o.Curve.Surge.Hold)
	cmd.Flag("seed", "Seed for client and route choice.").Uint64Var(&o.Seed)
	every := cmd.Flag("report-every", "Print progress this often (0: only at the end).").Default("5s").Duration()
	cmd.Action(cli.action(func(ctx context.Context) error {
		if o.Curve.Surge.Start == 0 {
			o.Curve.Surge = loadgen.Surge{}
		}
		g, err := loadgen.New(o)
		if err != nil {
			return err
		}
		r, err := runLoad(ctx, g, cli.stdout, *every)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(cli.stdout, "done: %v\n", r)
		return err
	}))
}

// runLoad runs g, printing its counts every `every`.
func runLoad(ctx context.Context, g *loadgen.Generator, w io.Writer, every time.Duration) (loadgen.Report, error) {
	done := make(chan struct{})
	var (
		r   loadgen.Report
		err error
	)
	go func() {
		defer close(done)
		r, err = g.Run(ctx)
	}()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-done:
			return r, err
		case <-tick:
			fmt.Fprintf(w, "rate %.0f/s %v\n", g.Rate(), g.Report())
		}
	}
}
