package notify_test

// placeholder replaced below
const childEnv = "SEISMO_NOTIFY_TEST_CHILD"

func runChild() int { return 0 }
