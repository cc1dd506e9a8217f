import assert from 'node:assert/strict';
import { BREAKS_THE_RUN, directiveProblem, readDirective, SET_BY_THE_SCRIPT } from '../../core/config/sbatch-options';

// Extra #SBATCH directives read as sbatch reads them (getopt_long), so that one which sets what the
// batch script sets is found in every spelling sbatch accepts.
describe('sbatch directives, read as sbatch reads them', () => {
  const sets = (line: string) => {
    const r = readDirective(line);
    assert.ok('options' in r, `${line}: ${'problem' in r ? r.problem : ''}`);
    return r.options;
  };

  it('long options with = or a space, and every unambiguous abbreviation', () => {
    assert.deepEqual(sets('--time=10'), ['time']);
    assert.deepEqual(sets('--time 10'), ['time']);
    assert.deepEqual(sets('--no-requ'), ['no-requeue']);
    assert.deepEqual(sets('--sig=B:USR1@60'), ['signal']);
    assert.deepEqual(sets('--chd /tmp'), ['chdir']);
    assert.deepEqual(sets('--outp=%j.log'), ['output']);
    assert.deepEqual(sets('#SBATCH --part gpu'), ['partition']);
    // An exact name wins over the longer names it begins.
    assert.deepEqual(sets('--mem=4G'), ['mem']);
    assert.deepEqual(sets('--requeue'), ['requeue']);
  });

  it('short options with the value attached or apart, and grouped flags', () => {
    assert.deepEqual(sets('-t 5'), ['time']);
    assert.deepEqual(sets('-t5'), ['time']);
    assert.deepEqual(sets('-D/tmp'), ['chdir']);
    assert.deepEqual(sets('-o x.log'), ['output']);
    assert.deepEqual(sets('-HD/tmp'), ['hold', 'chdir']);
    assert.deepEqual(sets('-Ct10'), ['constraint'], 'the value of -C is "t10", not a -t');
  });

  it('an abbreviation of several options, or none, is what sbatch refuses', () => {
    assert.match((readDirective('--ti=5') as { problem: string }).problem, /--time, --time-min/);
    assert.match((readDirective('--frobnicate') as { problem: string }).problem, /no option --frobnicate/);
    assert.match((readDirective('-j 3') as { problem: string }).problem, /no option -j/);
    assert.match((readDirective('exclusive') as { problem: string }).problem, /not an sbatch option/);
  });

  it('the options the script sets are all options sbatch knows', () => {
    for (const name of Object.keys(SET_BY_THE_SCRIPT)) assert.deepEqual(sets(`--${name}`), [name]);
  });

  it('options that change how sbatch or the job behaves are errors in every spelling, and say why', () => {
    const cases: Array<[string, RegExp]> = [
      ['--wait', /sets --wait: sbatch would not return until the job ends/],
      ['-W', /sets --wait/],
      ['--hol', /sets --hold/],
      ['--array=0-1', /sets --array: an array's tasks would all run in this one run folder/],
      ['-a 0-3%1', /sets --array/],
      ['--dependency=afterok:12', /sets --dependency: the job would wait on other jobs/],
      ['-d singleton', /sets --dependency/],
      ['--hold', /sets --hold/],
      ['-HQ', /sets --hold/],
      ['--clusters=other', /another cluster/],
      ['--test-only', /submit nothing/],
      ['--wrap=hostname', /instead of the batch script/],
    ];
    for (const [line, why] of cases) {
      const p = directiveProblem(line);
      assert.equal(p?.severity, 'error', line);
      assert.match(p!.message, why, line);
      assert.match(p!.message, /Remove it$/, line);
    }
    for (const name of Object.keys(BREAKS_THE_RUN)) assert.deepEqual(sets(`--${name}`), [name]);
  });

  it("options that leave the run alone are no problem; unreadable ones warn; the script's own ones are errors", () => {
    for (const line of [
      '--exclusive',
      '--constraint=a100',
      '-C a100',
      '--mail-type=END',
      '--begin=now+60',
      '--comment=x',
    ])
      assert.equal(directiveProblem(line), undefined, line);
    assert.equal(directiveProblem('--ti=5')?.severity, 'warning');
    assert.match(directiveProblem('-t 5')?.message ?? '', /sets --time \(from launch\.slurm\.time_limit\)/);
  });
});
