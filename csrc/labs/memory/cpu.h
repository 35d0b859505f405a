/* The memory lab's host side: pointer chains, the CPU's own chase and the host's bandwidth.
 * Plain C, no Python. */
#ifndef GL_MEMORY_CPU_H
#define GL_MEMORY_CPU_H

#include <stddef.h>
#include <stdint.h>

/* successor[i] for a chain over `nodes` nodes that visits every node from node 0: i + 1 in
 * order (shuffle 0), or a random single cycle from seed (Sattolo). -1 for 0 or > 2^32 nodes. */
int glcpu_chase_chain(uint32_t *successor, size_t nodes, int shuffle, uint64_t seed);
/* Places the chain in words (node i at word i * stride_words, holding its successor's word
 * index), walks warm_steps links from node 0 untimed, then times `repeat` passes of `steps`
 * dependent loads, each going on from where the last stopped (seconds[repeat]). */
int glcpu_chase(const uint32_t *successor, size_t nodes, size_t stride_words, uint32_t *words,
                size_t warm_steps, size_t steps, int repeat, double *seconds, uint32_t *final_node);
/* The node reached from node 0 after `steps` links. */
uint32_t glcpu_chain_walk(const uint32_t *successor, size_t steps);
/* Host bandwidth over `bytes` on every OpenMP thread: read b (a sum), write a (memset), or
 * copy b to a. */
enum { GLCPU_BW_READ = 0, GLCPU_BW_WRITE = 1, GLCPU_BW_COPY = 2 };
int glcpu_bandwidth(int kind, void *a, const void *b, size_t bytes, double *seconds);

#endif
