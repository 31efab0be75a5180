import { loopMachine as m } from './tests/fixtures/real/machines/loop.mjs';
import { initialTransition, transition } from 'xstate';
const N = +process.argv[2], K = +process.argv[3];
let [s] = initialTransition(m, {limit: N});
let tT=0, tP=0, tS=0, tR=0;
const t0 = performance.now();
let since=0;
for (let i=0;i<N;i++){
  let a=performance.now();
  if (since>=K){ s = m.restoreSnapshot(m.getPersistedSnapshot(s)); since=0; }
  let b=performance.now(); tR+=b-a;
  const sid = s.children.tick.sessionId;
  [s] = transition(m, s, {type:'xstate.done.actor', actorId:'tick', sessionId:sid, output:{delta:(i*7)%13}});
  since++;
  let c=performance.now(); tT+=c-b;
  const p = m.getPersistedSnapshot(s);
  let d=performance.now(); tP+=d-c;
  JSON.stringify(p);
  tS+=performance.now()-d;
}
const dt=performance.now()-t0;
console.log((N/dt*1000).toFixed(0)+'/s', {tT, tP, tS, tR});
