import type { Task } from "../../core/index.ts";

/** One task of the curriculum tree: its variance and rewards by the iteration it was used in. */
export interface CurriculumNode {
  id: string;
  instruction: string;
  /** 0: a seed task; n: the n-th variation. */
  generation: number;
  parent: string | null;
  /** Iterations that played it: episodes, mean reward and V_τ (population variance) of that iteration's group. */
  uses: { iteration: number; episodes: number; meanReward: number; variance: number }[];
  children: CurriculumNode[];
}

/**
 * The generated tasks as a forest: each root a seed task that was varied, each child a variation.
 * `rewards` are the run's episodes' rewards by task and iteration (from its buffer, what capacity
 * kept). A parent no longer known (evicted from the pool) still roots its children, with no text.
 */
export function curriculumTree(
  generated: readonly (Task & { lineage: { parent: string; generation: number } })[],
  rewards: readonly { task: string; iteration: number; rewards: number[] }[],
  seedInstruction: (id: string) => string | undefined,
): { roots: CurriculumNode[]; generated: number; seedsVaried: number } {
  const uses = new Map<string, CurriculumNode["uses"]>();
  for (const r of rewards) {
    const mean = r.rewards.reduce((a, x) => a + x, 0) / (r.rewards.length || 1);
    const variance = r.rewards.reduce((a, x) => a + (x - mean) ** 2, 0) / (r.rewards.length || 1);
    const list = uses.get(r.task) ?? [];
    list.push({ iteration: r.iteration, episodes: r.rewards.length, meanReward: mean, variance });
    uses.set(r.task, list);
  }
  for (const list of uses.values()) list.sort((a, b) => a.iteration - b.iteration);
  const nodes = new Map<string, CurriculumNode>();
  const node = (id: string, instruction: string, generation: number, parent: string | null): CurriculumNode => {
    let n = nodes.get(id);
    if (!n) nodes.set(id, (n = { id, instruction, generation, parent, uses: uses.get(id) ?? [], children: [] }));
    return n;
  };
  for (const t of generated) node(t.id, t.instruction, t.lineage.generation, t.lineage.parent);
  const roots: CurriculumNode[] = [];
  for (const t of generated) {
    const child = nodes.get(t.id)!;
    const known = nodes.get(t.lineage.parent);
    if (known) known.children.push(child);
    else {
      const root = node(t.lineage.parent, seedInstruction(t.lineage.parent) ?? "", 0, null);
      if (!roots.includes(root)) roots.push(root);
      root.children.push(child);
    }
  }
  return { roots, generated: generated.length, seedsVaried: roots.length };
}
