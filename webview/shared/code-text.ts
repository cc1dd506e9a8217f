// Advice text with `code` spans (a knob's name, a line to add) as a paragraph whose spans are
// <code> elements; built from text nodes only, so nothing in the text is read as HTML.
export function codeParagraph(text: string): HTMLParagraphElement {
  const p = document.createElement('p');
  text.split('`').forEach((part, i) => {
    if (!part) return;
    if (i % 2 === 1) {
      const code = document.createElement('code');
      code.textContent = part;
      p.append(code);
    } else p.append(document.createTextNode(part));
  });
  return p;
}
