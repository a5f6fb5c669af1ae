// Command loadtarget serves a synthetic Prometheus target for the load
// test (scripts/load.sh): -series series in all, half of them counters that
// grow at a steady rate per shard, half gauges that wander, so that rules
// over them have real work on every evaluation. It listens on loopback
// only.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	series := flag.Int("series", 10000, "number of series served")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("loadtarget: -addr must be a loopback host:port, got %q", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String()) // the script reads the port from here
	start := time.Now()
	var mu sync.Mutex
	var buf bytes.Buffer
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		buf.Reset()
		t := time.Since(start).Seconds()
		half := *series / 2
		buf.WriteString("# TYPE load_requests_total counter\n")
		for i := range half {
			buf.WriteString(`load_requests_total{shard="`)
			buf.WriteString(strconv.Itoa(i))
			buf.WriteString(`"} `)
			buf.WriteString(strconv.FormatFloat(math.Floor(t*float64(1+i%7)), 'f', -1, 64))
			buf.WriteByte('\n')
		}
		buf.WriteString("# TYPE load_latency_seconds gauge\n")
		for i := range *series - half {
			buf.WriteString(`load_latency_seconds{shard="`)
			buf.WriteString(strconv.Itoa(i))
			buf.WriteString(`"} `)
			buf.WriteString(strconv.FormatFloat(0.1+0.05*math.Sin(t/10+float64(i)), 'f', 4, 64))
			buf.WriteByte('\n')
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(buf.Bytes())
	})
	log.Fatal(http.Serve(ln, nil))
}
