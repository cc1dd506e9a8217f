// A chart as a PNG for export: the plot's own canvas (axes, lines, markers) with its title and note
// above and the legend below, on the editor's background, as a data: URL. Canvas only, so the
// webview needs no relaxed CSP; the extension host writes the file.

export interface LegendEntry {
  label: string;
  colour: string;
  dashed?: boolean;
}

function colourOf(variable: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

export function chartPng(
  plot: HTMLCanvasElement,
  title: string,
  note: string | undefined,
  legend: LegendEntry[],
): string {
  const dpr = window.devicePixelRatio || 1;
  const family = getComputedStyle(document.body).fontFamily || 'sans-serif';
  const pad = Math.round(8 * dpr);
  const titleH = Math.round((note ? 40 : 26) * dpr);
  const rowH = Math.round(18 * dpr);
  const canvas = document.createElement('canvas');
  const ctx = canvas.getContext('2d')!;
  // Lay the legend out in rows first, to know the height.
  ctx.font = `${12 * dpr}px ${family}`;
  const rows: Array<Array<{ entry: LegendEntry; x: number }>> = [[]];
  let x = pad;
  for (const entry of legend) {
    const w = 22 * dpr + ctx.measureText(entry.label).width + 16 * dpr;
    if (x + w > plot.width - pad && rows[rows.length - 1].length) {
      rows.push([]);
      x = pad;
    }
    rows[rows.length - 1].push({ entry, x });
    x += w;
  }
  canvas.width = plot.width;
  canvas.height = titleH + plot.height + rows.length * rowH + pad;
  ctx.fillStyle = colourOf('--vscode-editor-background', '#1e1e1e');
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.textBaseline = 'top';
  ctx.fillStyle = colourOf('--vscode-foreground', '#ccc');
  ctx.font = `600 ${14 * dpr}px ${family}`;
  ctx.fillText(title, pad, pad);
  if (note) {
    ctx.fillStyle = colourOf('--vscode-descriptionForeground', '#999');
    ctx.font = `${11 * dpr}px ${family}`;
    ctx.fillText(note, pad, pad + 18 * dpr);
  }
  ctx.drawImage(plot, 0, titleH);
  ctx.font = `${12 * dpr}px ${family}`;
  ctx.textBaseline = 'middle';
  rows.forEach((row, r) => {
    const y = titleH + plot.height + r * rowH + rowH / 2;
    for (const { entry, x: at } of row) {
      ctx.strokeStyle = entry.colour;
      ctx.lineWidth = 2 * dpr;
      ctx.setLineDash(entry.dashed ? [5 * dpr, 3 * dpr] : []);
      ctx.beginPath();
      ctx.moveTo(at, y);
      ctx.lineTo(at + 16 * dpr, y);
      ctx.stroke();
      ctx.fillStyle = colourOf('--vscode-foreground', '#ccc');
      ctx.fillText(entry.label, at + 22 * dpr, y);
    }
  });
  return canvas.toDataURL('image/png');
}
