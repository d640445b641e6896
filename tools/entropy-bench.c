/*
 * entropy-bench.c - the benchmark (to be written)
 * STUB: to be written.
 */
int main(void) { return 4; }
