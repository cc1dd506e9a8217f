import assert from 'node:assert/strict';
import { readDirective, SET_BY_THE_SCRIPT } from '../../core/config/sbatch-options';

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
});
