// A small element builder: the panel builds its DOM once and afterwards only updates text,
// classes and widths, so no framework is needed (and nothing is parsed from HTML strings).

type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Record<string, string>,
  ...children: Child[]
): HTMLElementTagNameMap[K];
export function el(tag: string, attrs?: Record<string, string>, ...children: Child[]): HTMLElement;
export function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c) e.append(c);
  return e;
}

/** Replaces an element's children. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...children.filter((c): c is Node | string => !!c));
}
