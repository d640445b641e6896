/*
 * entropy-stream.c - the CLI (to be written)
 * STUB: to be written.
 */
int main(void) { return 4; }
